// Webhook SSRF rules (docs/decisions.md §5): the subscription URL rules in their order, and the address
// ranges that are blocked both at creation (IP literals) and at send time (resolved addresses).
import t from "tap";
import type { Test } from "tap";
import {
  canonicalWebhookUrl,
  checkWebhookUrl as checkWithPorts,
  isBlockedAddress,
  parseIpLiteral,
  parsePortRanges,
  type PortRanges,
} from "../../foundation/url-safety.ts";

// The structural rules are tested with every port allowed; the port rule has tests of its own below.
const EVERY_PORT: PortRanges = [[1, 65535]];
const checkWebhookUrl = (raw: string) => checkWithPorts(raw, { allowedPorts: EVERY_PORT });

function ruleOf(raw: string): string {
  const verdict = checkWebhookUrl(raw);
  return verdict.ok ? "ok" : verdict.rule;
}

function expectRule(t: Test, cases: string[], rule: string): void {
  for (const raw of cases) t.equal(ruleOf(raw), rule, raw);
}

t.test("invalid_url: the URL must parse as an absolute URL", async (t) => {
  expectRule(
    t,
    ["", "not a url", "/relative/path", "hooks.example.com/x", "https://", "https://exa mple.com/", "https://[::1/"],
    "invalid_url",
  );
  const verdict = checkWebhookUrl("nope");
  t.same(verdict, { ok: false, rule: "invalid_url", message: "URL must be a valid absolute URL" });
});

t.test("scheme: only https is accepted, and it is checked before everything after it", async (t) => {
  expectRule(
    t,
    [
      "http://hooks.example.com/x",
      "ftp://hooks.example.com/",
      "wss://hooks.example.com/",
      "javascript:alert(1)",
      "file:///etc/passwd",
      "data:text/plain,x",
    ],
    "scheme",
  );
  // Each of these also breaks a later rule; the scheme is reported first.
  expectRule(
    t,
    ["http://10.0.0.1/", "http://user:pw@hooks.example.com/", "http://intranet/", "http://localhost/"],
    "scheme",
  );
  const verdict = checkWebhookUrl("http://10.0.0.1");
  t.equal(verdict.ok, false);
  if (!verdict.ok) t.equal(verdict.message, "URL scheme must be https");
  t.equal(ruleOf("HTTPS://hooks.example.com/x"), "ok", "the scheme is case-insensitive");
});

t.test("userinfo: no user name or password, checked before the host rules", async (t) => {
  expectRule(
    t,
    [
      "https://user@hooks.example.com/",
      "https://user:pw@hooks.example.com/",
      "https://:pw@hooks.example.com/",
      "https://user@10.0.0.1/",
      "https://user@intranet/",
    ],
    "userinfo",
  );
  const verdict = checkWebhookUrl("https://a:b@hooks.example.com/");
  if (!verdict.ok) t.match(verdict.message, /user name or password/);
  // WHATWG drops an empty userinfo section entirely.
  t.equal(ruleOf("https://@hooks.example.com/"), "ok");
});

t.test("blocked_address: private and reserved IPv4 literals, in every form URL parsing normalises", async (t) => {
  expectRule(
    t,
    [
      "https://127.0.0.1/",
      "https://127.1/",
      "https://0x7f.1/",
      "https://0x7f000001/",
      "https://2130706433/",
      "https://0177.0.0.1/",
      "https://%31%32%37.0.0.1/",
      "https://１２７.０.０.１/",
      "https://127.0.0.1./",
      "https://10.0.0.1/",
      "https://172.16.5.4/",
      "https://192.168.1.1:8443/",
      "https://169.254.169.254/latest/meta-data/",
      "https://100.64.0.1/",
      "https://0.0.0.0/",
      "https://0/",
      "https://224.0.0.1/",
      "https://255.255.255.255/",
      "https://192.0.2.1/",
      "https://198.51.100.7/",
      "https://203.0.113.9/",
      "https://198.18.0.1/",
      "https://240.0.0.1/",
    ],
    "blocked_address",
  );
  const verdict = checkWebhookUrl("https://10.0.0.1/");
  if (!verdict.ok) t.match(verdict.message, /private.*IP address/);
});

t.test("blocked_address: private and reserved IPv6 literals, including IPv4-mapped forms", async (t) => {
  expectRule(
    t,
    [
      "https://[::1]/",
      "https://[::]/",
      "https://[fe80::1]/",
      "https://[fd00::1]/",
      "https://[fc00::1]/",
      "https://[fec0::1]/",
      "https://[ff02::1]/",
      "https://[2001:db8::1]/",
      "https://[::ffff:10.0.0.1]/",
      "https://[::ffff:127.0.0.1]/",
      "https://[::ffff:7f00:1]/",
      "https://[::ffff:169.254.169.254]/",
      "https://[::127.0.0.1]/",
      "https://[::8.8.8.8]/",
      "https://[64:ff9b::10.0.0.1]/",
      "https://[2002:a00:1::1]/",
    ],
    "blocked_address",
  );
  // The blocked-address rule runs before the dot rule, so dot-less literals report it.
  t.equal(ruleOf("https://[::1]:8443/x"), "blocked_address");
});

t.test("blocked_address: localhost names are loopback", async (t) => {
  expectRule(
    t,
    [
      "https://localhost/",
      "https://LOCALHOST:8443/",
      "https://localhost./",
      "https://api.localhost/",
      "https://a.b.localhost./",
    ],
    "blocked_address",
  );
  const verdict = checkWebhookUrl("https://localhost/");
  if (!verdict.ok) t.match(verdict.message, /localhost/);
  t.equal(ruleOf("https://localhost.example.com/"), "ok", "only the name itself and its subdomains");
  t.equal(ruleOf("https://notlocalhost.example/"), "ok");
});

t.test("host_not_qualified: the host must contain a dot", async (t) => {
  expectRule(
    t,
    ["https://intranet/", "https://intranet./", "https://intranet:8443/x", "https://a../", "https://.example/"],
    "host_not_qualified",
  );
  const verdict = checkWebhookUrl("https://intranet/");
  if (!verdict.ok) t.equal(verdict.message, "URL host must be a fully qualified domain name (contain a dot)");
});

t.test("public IPv6 literals are accepted: the dot rule is for names, not IP literals", async (t) => {
  for (const url of [
    "https://[2001:4860:4860::8888]/hook",
    "https://[2606:4700:4700::1111]/",
    "https://[::ffff:8.8.8.8]/",
    "https://[2001:4860:4860::8888]:443/x",
  ]) {
    const verdict = checkWebhookUrl(url);
    t.equal(verdict.ok, true, url);
  }
  const verdict = checkWebhookUrl("https://[2001:4860:4860::8888]/hook");
  if (verdict.ok) t.equal(verdict.host, "2001:4860:4860::8888", "host without brackets");
  // Every blocked range is still refused as an IPv6 literal.
  expectRule(
    t,
    [
      "https://[::1]/",
      "https://[fe80::1]/",
      "https://[fc00::1]/",
      "https://[fd12:3456::1]/",
      "https://[ff02::1]/",
      "https://[::]/",
      "https://[2001:db8::1]/",
      "https://[::ffff:127.0.0.1]/",
      "https://[::ffff:10.0.0.1]/",
      "https://[64:ff9b::a00:1]/",
      "https://[2002:c0a8:101::1]/",
      "https://[::127.0.0.1]/",
    ],
    "blocked_address",
  );
});

t.test("port_not_allowed: the port must be one of WEBHOOK_ALLOWED_PORTS, and never 0", async (t) => {
  const only443 = parsePortRanges("443");
  const mixed = parsePortRanges("443, 8443,1024-2048");
  if (typeof only443 === "string" || typeof mixed === "string") return t.fail("valid lists parse");
  const rule = (url: string, allowed: PortRanges) => {
    const verdict = checkWithPorts(url, { allowedPorts: allowed });
    return verdict.ok ? "ok" : verdict.rule;
  };
  t.equal(rule("https://hooks.example.com/", only443), "ok", "no port is 443");
  t.equal(rule("https://hooks.example.com:443/", only443), "ok");
  t.equal(rule("https://hooks.example.com:8443/", only443), "port_not_allowed");
  t.equal(rule("https://hooks.example.com:22/", only443), "port_not_allowed");
  t.equal(rule("https://hooks.example.com:0/", only443), "port_not_allowed");
  t.equal(rule("https://hooks.example.com:0/", EVERY_PORT), "port_not_allowed", "port 0 never, whatever the list");
  t.equal(rule("https://[2001:4860:4860::8888]:22/", only443), "port_not_allowed");
  t.equal(rule("https://hooks.example.com:8443/", mixed), "ok");
  t.equal(rule("https://hooks.example.com:1024/", mixed), "ok");
  t.equal(rule("https://hooks.example.com:2048/", mixed), "ok");
  t.equal(rule("https://hooks.example.com:2049/", mixed), "port_not_allowed");
  t.equal(rule("https://hooks.example.com:1023/", mixed), "port_not_allowed");
  const refused = checkWithPorts("https://hooks.example.com:22/", { allowedPorts: mixed });
  if (!refused.ok) t.equal(refused.message, "URL port must be 443, 8443 or 1024-2048");
  t.same(mixed, [
    [443, 443],
    [8443, 8443],
    [1024, 2048],
  ]);
  for (const bad of ["", "0", "65536", "80-", "2048-1024", "https", "443;8443", "0-100"])
    t.type(parsePortRanges(bad), "string", `"${bad}" is refused`);
});

t.test("allowed: public names and public IPv4 literals pass, with host and port", async (t) => {
  const verdict = checkWebhookUrl("https://hooks.example.com/x?y=1");
  t.equal(verdict.ok, true);
  if (verdict.ok) {
    t.equal(verdict.host, "hooks.example.com");
    t.equal(verdict.port, 443);
    t.equal(verdict.url.href, "https://hooks.example.com/x?y=1");
  }
  const literal = checkWebhookUrl("https://8.8.8.8/");
  t.equal(literal.ok, true, "a public IPv4 literal has dots and is allowed");
  if (literal.ok) t.equal(literal.host, "8.8.8.8");
  const ported = checkWebhookUrl("https://Hooks.Example.COM:8443/a");
  t.equal(ported.ok, true);
  if (ported.ok) {
    t.equal(ported.host, "hooks.example.com");
    t.equal(ported.port, 8443);
  }
  const explicitDefault = checkWebhookUrl("https://hooks.example.com:443/");
  if (explicitDefault.ok) t.equal(explicitDefault.port, 443);
  expectRule(
    t,
    [
      "https://hooks.example.com./",
      "https://bücher.example/",
      "https://134744072/",
      "https://10.example.com/",
      "https://127.0.0.1.example.com/",
    ],
    "ok",
  );
});

t.test("fragment: a URL with a fragment is refused, an empty one too (it is never sent)", async (t) => {
  expectRule(
    t,
    ["https://hooks.example.com/a#f", "https://hooks.example.com/#", "https://hooks.example.com#x"],
    "fragment",
  );
  t.equal(ruleOf("https://hooks.example.com/a%23f"), "ok", "an escaped # is part of the path");
});

t.test("canonicalWebhookUrl: every spelling of one URL has one canonical form", async (t) => {
  const canonical = (raw: string) => {
    const verdict = checkWebhookUrl(raw);
    return verdict.ok ? verdict.canonical : `refused: ${verdict.rule}`;
  };
  const spellings = [
    "https://hooks.example.com/a",
    "https://hooks.example.com/a?",
    "https://HOOKS.Example.COM/a",
    "https://hooks.example.com./a",
    "https://hooks.example.com/./a",
    "https://hooks.example.com/b/../a",
    "https://hooks.example.com/%2e/a",
    "https://hooks.example.com/%61",
    "https://hooks.example.com:443/a",
    "https://hooks.example.com:0443/a",
    "https://hooks.example.com:000443/a",
    "HTTPS://hooks.example.com/a",
  ];
  for (const raw of spellings) t.equal(canonical(raw), "https://hooks.example.com/a", raw);
  t.equal(canonical("https://hooks.example.com:018843/a"), "https://hooks.example.com:18843/a", "leading zeros");
  t.equal(canonical("https://hooks.example.com:18843/a"), "https://hooks.example.com:18843/a");
  t.equal(canonical("https://bücher.example/"), "https://xn--bcher-kva.example/", "punycode");
  t.equal(canonical("https://hooks.example.com"), "https://hooks.example.com/", "the empty path is /");
  t.equal(
    canonical("https://hooks.example.com/x%7e%2f%2F?q=%41%3d&r"),
    "https://hooks.example.com/x~%2F%2F?q=A%3D&r",
    "unreserved escapes decoded in path and query, the others upper-cased and kept",
  );
  t.equal(canonical("https://hooks.example.com/A"), "https://hooks.example.com/A", "the path keeps its case");
  t.equal(canonical("https://hooks.example.com/a?b=1&a=2"), "https://hooks.example.com/a?b=1&a=2", "query order kept");
  t.equal(canonical("https://[2606:4700:4700:0:0:0:0:1111]:443/"), "https://[2606:4700:4700::1111]/");
  t.equal(canonicalWebhookUrl(new URL("https://hooks.example.com/a#f")), "https://hooks.example.com/a", "no fragment");
});

t.test("parseIpLiteral: IP literals in normal form, names undefined", async (t) => {
  t.equal(parseIpLiteral("127.0.0.1"), "127.0.0.1");
  t.equal(parseIpLiteral("127.1"), "127.0.0.1");
  t.equal(parseIpLiteral("0x7f000001"), "127.0.0.1");
  t.equal(parseIpLiteral("[::1]"), "::1");
  t.equal(parseIpLiteral("::FFFF:10.0.0.1"), "::ffff:a00:1");
  t.equal(parseIpLiteral("[::8.8.8.8]"), "::808:808", "IPv4-compatible stays IPv4-compatible");
  t.equal(parseIpLiteral("hooks.example.com"), undefined);
  t.equal(parseIpLiteral("localhost"), undefined);
  t.equal(parseIpLiteral("[not-an-ip]"), undefined);
  t.equal(parseIpLiteral("1.2.3.4.5"), undefined);
  // The legacy IPv4 forms in any letter case, and names made only of hex letters and dots.
  t.equal(parseIpLiteral("0X7F.1"), "127.0.0.1");
  t.equal(parseIpLiteral("2130706433"), "127.0.0.1");
  t.equal(parseIpLiteral("0177.0.0.1"), "127.0.0.1");
  t.equal(parseIpLiteral("0xA9.0xFE.0xa9.0xfe"), "169.254.169.254");
  t.equal(parseIpLiteral("cafe.be"), undefined);
  t.equal(parseIpLiteral("deadbeef"), undefined);
  t.equal(parseIpLiteral("127.0.0.1.nip.io"), undefined);
});

t.test("isBlockedAddress: IPv4 special-purpose ranges", async (t) => {
  const blocked: [string, string][] = [
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "this network 0/8"],
    ["10.0.0.1", "private 10/8"],
    ["10.255.255.255", "private 10/8"],
    ["172.16.0.1", "private 172.16/12"],
    ["172.31.255.255", "private 172.16/12"],
    ["192.168.0.1", "private 192.168/16"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.169.254", "link-local (cloud metadata)"],
    ["100.64.0.1", "shared 100.64/10"],
    ["100.127.255.255", "shared 100.64/10"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["192.0.2.1", "documentation TEST-NET-1"],
    ["198.51.100.1", "documentation TEST-NET-2"],
    ["203.0.113.1", "documentation TEST-NET-3"],
    ["198.18.0.1", "benchmarking 198.18/15"],
    ["198.19.255.255", "benchmarking 198.18/15"],
    ["240.0.0.1", "reserved 240/4"],
    ["192.0.0.8", "IETF protocol assignments 192.0.0/24"],
    ["192.88.99.1", "6to4 relay anycast"],
  ];
  for (const [address, why] of blocked) t.equal(isBlockedAddress(address), true, `${address} ${why}`);
  for (const address of [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "172.32.0.1",
    "100.128.0.1",
    "11.0.0.1",
    "223.255.255.254",
    "198.20.0.1",
  ]) {
    t.equal(isBlockedAddress(address), false, `${address} is public`);
  }
});

t.test("isBlockedAddress: IPv6 special-purpose ranges", async (t) => {
  const blocked: [string, string][] = [
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "zoned"],
    ["fc00::1", "unique-local"],
    ["fd00::1", "unique-local"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["ff0e::1", "global-scope multicast"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation 3fff::/20"],
    ["2001:2::1", "benchmarking"],
    ["2001:10::1", "ORCHID"],
    ["100::1", "discard-only"],
    ["4000::1", "outside 2000::/3"],
    ["::ffff:0:a00:1", "IPv4-translated"],
  ];
  for (const [address, why] of blocked) t.equal(isBlockedAddress(address), true, `${address} ${why}`);
  for (const address of ["2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:80e::200e"]) {
    t.equal(isBlockedAddress(address), false, `${address} is public`);
  }
});

t.test("isBlockedAddress: IPv4 embedded in IPv6 is judged by the embedded address", async (t) => {
  // IPv4-mapped ::ffff:a.b.c.d
  t.equal(isBlockedAddress("::ffff:10.0.0.1"), true);
  t.equal(isBlockedAddress("::ffff:127.0.0.1"), true);
  t.equal(isBlockedAddress("::ffff:7f00:1"), true);
  t.equal(isBlockedAddress("::ffff:a9fe:a9fe"), true, "169.254.169.254");
  t.equal(isBlockedAddress("::ffff:8.8.8.8"), false);
  t.equal(isBlockedAddress("::ffff:808:808"), false);
  // IPv4-compatible ::a.b.c.d (deprecated) is blocked whatever it embeds
  t.equal(isBlockedAddress("::127.0.0.1"), true);
  t.equal(isBlockedAddress("::8.8.8.8"), true);
  t.equal(isBlockedAddress("::808:808"), true);
  // NAT64 well-known prefix; the local-use prefix is blocked outright
  t.equal(isBlockedAddress("64:ff9b::10.0.0.1"), true);
  t.equal(isBlockedAddress("64:ff9b::7f00:1"), true);
  t.equal(isBlockedAddress("64:ff9b::8.8.8.8"), false);
  t.equal(isBlockedAddress("64:ff9b:1::808:808"), true);
  // 6to4 2002:AABB:CCDD::
  t.equal(isBlockedAddress("2002:a00:1::1"), true, "6to4 of 10.0.0.1");
  t.equal(isBlockedAddress("2002:7f00:1::"), true, "6to4 of 127.0.0.1");
  t.equal(isBlockedAddress("2002:808:808::1"), false, "6to4 of 8.8.8.8");
  // Teredo 2001:0:server:flags:port:~client
  t.equal(isBlockedAddress("2001:0:4136:e378:8000:63bf:3fff:fdd2"), true, "client 192.0.2.45 (RFC 4380 example)");
  t.equal(isBlockedAddress("2001:0:4136:e378::f5ff:fffe"), true, "client 10.0.0.1");
  t.equal(isBlockedAddress("2001:0:a00:1::f7f7:f7f7"), true, "server 10.0.0.1");
  t.equal(isBlockedAddress("2001:0:4136:e378::f7f7:f7f7"), false, "server 65.54.227.120, client 8.8.8.8");
});

t.test("isBlockedAddress: unparseable or non-canonical input is blocked", async (t) => {
  for (const input of [
    "",
    "localhost",
    "hooks.example.com",
    "127.1",
    "0x7f000001",
    "2130706433",
    "010.0.0.1",
    "8.8.8.8 ",
    " 8.8.8.8",
    "[::1]",
    "[2606:4700::1111]",
    "1.2.3.256",
    "1.2.3.4.5",
    "::g",
    "1::2::3",
    "::ffff:1.2.3",
    "2606:4700::1111%1",
  ]) {
    t.equal(isBlockedAddress(input), true, JSON.stringify(input));
  }
});
