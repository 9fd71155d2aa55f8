// SSRF rules for webhook targets (docs/decisions.md §5), used at subscription creation (checkWebhookUrl)
// and at send time (isBlockedAddress on every resolved address). Only clearly global unicast
// addresses pass; anything unparseable or special-purpose is blocked. Also the one spelling of a
// webhook URL (canonicalWebhookUrl) by which subscriptions are stored and compared.
import ipaddr from "ipaddr.js";

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

function v4FromWords(high: number, low: number): IPv4 {
  return new ipaddr.IPv4([(high >> 8) & 0xff, high & 0xff, (low >> 8) & 0xff, low & 0xff]);
}

// ipaddr.js names every special-purpose IPv4 block (private, loopback, linkLocal, carrierGradeNat,
// multicast, unspecified = 0/8, broadcast, reserved = 192.0.0/24, 192.0.2/24, 192.88.99/24,
// 198.18/15, 198.51.100/24, 203.0.113/24, 240/4, plus as112 and amt). Only "unicast" passes, so a
// range added by a later ipaddr.js version is blocked by default.
function isBlockedV4(address: IPv4): boolean {
  return address.range() !== "unicast";
}

function word(parts: number[], index: number): number {
  return parts[index] ?? 0;
}

function allZero(parts: number[], from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (word(parts, i) !== 0) return false;
  return true;
}

function isBlockedV6(address: IPv6): boolean {
  if (address.zoneId) return true; // scoped (zone) addresses are never global
  const parts = address.parts;
  const p0 = word(parts, 0);
  const p1 = word(parts, 1);
  const embedded = (): IPv4 => v4FromWords(word(parts, 6), word(parts, 7));
  // IPv4-mapped ::ffff:0:0/96: judge the embedded IPv4 address.
  if (allZero(parts, 0, 5) && word(parts, 5) === 0xffff) return isBlockedV4(embedded());
  // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052): judge the embedded IPv4 address.
  // The local-use prefix 64:ff9b:1::/48 falls through and is blocked (outside 2000::/3).
  if (p0 === 0x64 && p1 === 0xff9b && allZero(parts, 2, 6)) return isBlockedV4(embedded());
  // 6to4 2002::/16: the IPv4 address is in bits 16–47.
  if (p0 === 0x2002) return isBlockedV4(v4FromWords(p1, word(parts, 2)));
  // Teredo 2001::/32: server IPv4 in bits 32–63, client IPv4 (bit-inverted) in bits 96–127.
  if (p0 === 0x2001 && p1 === 0) {
    const server = v4FromWords(word(parts, 2), word(parts, 3));
    const client = v4FromWords(~word(parts, 6) & 0xffff, ~word(parts, 7) & 0xffff);
    return isBlockedV4(server) || isBlockedV4(client);
  }
  // Global unicast is 2000::/3. Everything else (::/8 incl. IPv4-compatible ::a.b.c.d and the
  // IPv4-translated ::ffff:0:0:0/96, 100::/64, fc00::/7, fe80::/10, fec0::/10, ff00::/8, ...)
  // is blocked, as are the special blocks inside 2000::/3 that ipaddr.js names (2001::/23
  // protocol assignments, 2001:db8::/32 and 3fff::/20 documentation, 2001:2::/48 benchmarking,
  // ORCHID, AS112, AMT, ...).
  if ((p0 & 0xe000) !== 0x2000) return true;
  return address.range() !== "unicast";
}

// Parses an IPv6 address in its plain or dotted-tail form. ipaddr.js treats "::a.b.c.d" as the
// IPv4-mapped "::ffff:a.b.c.d", so the dotted tail is rewritten into two hex words first.
function parseV6(text: string): IPv6 | undefined {
  let candidate = text;
  const dot = candidate.indexOf(".");
  if (dot !== -1) {
    const colon = candidate.lastIndexOf(":");
    const tail = candidate.slice(colon + 1);
    if (colon === -1 || !ipaddr.IPv4.isValidFourPartDecimal(tail)) return undefined;
    const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(tail).octets;
    candidate = `${candidate.slice(0, colon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  if (!ipaddr.IPv6.isValid(candidate)) return undefined;
  return ipaddr.IPv6.parse(candidate);
}

/**
 * True when `address` (a canonical IPv4 dotted quad or an IPv6 address, no brackets) is anything
 * but clearly global unicast. Unparseable input, including non-canonical IPv4 forms such as
 * "127.1" or "0x7f000001", is blocked; use parseIpLiteral first to normalise a URL host.
 */
export function isBlockedAddress(address: string): boolean {
  if (typeof address !== "string") return true;
  if (address.includes(":")) {
    if (address.includes("%")) return true;
    const parsed = parseV6(address);
    return parsed === undefined ? true : isBlockedV6(parsed);
  }
  if (!ipaddr.IPv4.isValidFourPartDecimal(address)) return true;
  return isBlockedV4(ipaddr.IPv4.parse(address));
}

/**
 * When `host` is an IP literal, returns the address in normal form (IPv6 without brackets);
 * otherwise undefined. Accepts "[v6]", bare v6, dotted-quad IPv4 and the legacy IPv4 forms
 * (127.1, 0x7f.1, 2130706433) that WHATWG URL parsing would also read as addresses.
 */
export function parseIpLiteral(host: string): string | undefined {
  if (host.startsWith("[") && host.endsWith("]")) {
    return parseV6(host.slice(1, -1))?.toString();
  }
  if (host.includes(":")) return parseV6(host)?.toString();
  // Every IPv4 form is digits, dots and hex ("0x7f.1"): any other character is a host name, answered
  // without ipaddr.js's isValid, which throws and catches an exception for each name (measured: 5 % of
  // a delivering worker's CPU, called for every attempt to a named host).
  if (!IPV4_CHARACTERS.test(host)) return undefined;
  if (ipaddr.IPv4.isValid(host)) return ipaddr.IPv4.parse(host).toString();
  return undefined;
}

const IPV4_CHARACTERS = /^[0-9a-fx.]+$/i;

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

export interface UrlRuleOptions {
  /** How messages name the URL: "URL", "return_url", "--launch-url". */
  name: string;
  maxLength?: number;
  /** http is accepted on a loopback host (local development of a partner's launch page). */
  allowLoopbackHttp?: boolean;
}

/**
 * The rules every URL the service accepts shares, in order: a parseable absolute URL, at most maxLength
 * characters, https (http on a loopback host only where allowed), no user name or password.
 */
export function checkUrl(
  raw: string,
  options: UrlRuleOptions,
): { ok: true; url: URL } | { ok: false; rule: string; message: string } {
  const { name } = options;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, rule: "invalid_url", message: `${name} must be a valid absolute URL` };
  }
  if (options.maxLength !== undefined && raw.length > options.maxLength) {
    return { ok: false, rule: "too_long", message: `${name} must be at most ${options.maxLength} characters` };
  }
  const loopbackHttp = options.allowLoopbackHttp && url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== "https:" && !loopbackHttp) {
    const message = options.allowLoopbackHttp
      ? `${name} scheme must be https (http only on a loopback host)`
      : `${name} scheme must be https`;
    return { ok: false, rule: "scheme", message };
  }
  if (url.username !== "" || url.password !== "") {
    return { ok: false, rule: "userinfo", message: `${name} must not contain a user name or password` };
  }
  return { ok: true, url };
}

/** Inclusive port ranges, e.g. [[443, 443], [1024, 65535]] (WEBHOOK_ALLOWED_PORTS). */
export type PortRanges = readonly (readonly [number, number])[];

export const DEFAULT_WEBHOOK_PORTS = "443";

/**
 * Parses a comma-separated list of ports and ranges ("443,8443,1024-65535"). Every entry is a whole
 * number from 1 to 65535 (port 0 is never a target) or a range low-high with low <= high; returns a
 * message instead when the text breaks that.
 */
export function parsePortRanges(text: string): PortRanges | string {
  const entries = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  if (entries.length === 0) return "must name at least one port";
  const ranges: [number, number][] = [];
  for (const entry of entries) {
    const match = /^(\d{1,5})(?:\s*-\s*(\d{1,5}))?$/.exec(entry);
    const low = Number(match?.[1]);
    const high = match?.[2] === undefined ? low : Number(match[2]);
    if (!match || low < 1 || high > 65535 || low > high) {
      return `must be ports from 1 to 65535 and ranges low-high separated by commas, got "${entry}"`;
    }
    ranges.push([low, high]);
  }
  return ranges;
}

export function portAllowed(port: number, allowed: PortRanges): boolean {
  return port >= 1 && port <= 65535 && allowed.some(([low, high]) => port >= low && port <= high);
}

/** "443, 8443 and 1024-65535": the allowed ports as the refusal message names them. */
function describePorts(allowed: PortRanges): string {
  const parts = allowed.map(([low, high]) => (low === high ? String(low) : `${low}-${high}`));
  return parts.length === 1 ? (parts[0] ?? "") : `${parts.slice(0, -1).join(", ")} or ${parts.at(-1) ?? ""}`;
}

export type UrlVerdict =
  { ok: true; url: URL; host: string; port: number; canonical: string } | { ok: false; rule: string; message: string };

function reject(rule: string, message: string): UrlVerdict {
  return { ok: false, rule, message };
}

function isLocalhost(name: string): boolean {
  return name === "localhost" || name.endsWith(".localhost");
}

// "Fully qualified": at least two labels, none empty (one trailing dot already stripped).
function isQualified(name: string): boolean {
  const labels = name.split(".");
  return labels.length >= 2 && labels.every((label) => label.length > 0);
}

// RFC 3986 §2.3: letters, digits, "-", ".", "_" and "~" mean the same escaped or not.
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** Percent-escapes of unreserved characters decoded (RFC 3986 §6.2.2.2), the others in upper case (§6.2.2.1). */
function normalisePercentEscapes(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(character) ? character : `%${hex.toUpperCase()}`;
  });
}

/**
 * The one spelling of a webhook URL, by which subscriptions are stored and compared: the WHATWG URL
 * serialisation (scheme and host in lower case, an international name in punycode, a port without
 * leading zeros and none when it is the default, "." and ".." segments resolved, "%2e" among them),
 * and beyond it the host without a trailing dot, percent-escapes of unreserved characters decoded and
 * the others in upper case, no empty query ("?") and no fragment (which is never sent to the endpoint).
 */
export function canonicalWebhookUrl(url: URL): string {
  const hostname = url.hostname.endsWith(".") ? url.hostname.slice(0, -1) : url.hostname;
  const host = url.port === "" ? hostname : `${hostname}:${url.port}`;
  return `${url.protocol}//${host}${normalisePercentEscapes(url.pathname)}${normalisePercentEscapes(url.search)}`;
}

/**
 * The subscription URL rules of docs/decisions.md §5, checked in order: parseable absolute URL, https,
 * no userinfo, no fragment, host not a blocked IP literal (nor localhost), host contains a dot (a public IP
 * literal needs none: IPv6 literals never have one), and the port one of `allowedPorts`
 * (WEBHOOK_ALLOWED_PORTS; port 0 never). On success `host` is url.hostname without IPv6 brackets,
 * `port` is url.port or 443 and `canonical` the URL's one spelling (canonicalWebhookUrl).
 */
export function checkWebhookUrl(raw: string, options: { allowedPorts: PortRanges }): UrlVerdict {
  const basics = checkUrl(raw, { name: "URL" });
  if (!basics.ok) return basics;
  const { url } = basics;
  // Only a fragment puts "#" in the serialisation, an empty one ("/#") too.
  if (url.href.includes("#"))
    return reject("fragment", "URL must not contain a fragment (#...): it is never sent to the endpoint");
  const hostname = url.hostname;
  const literal = parseIpLiteral(hostname);
  if (literal !== undefined && isBlockedAddress(literal)) {
    return reject(
      "blocked_address",
      "URL host must not be a private, loopback, link-local, multicast or reserved IP address",
    );
  }
  const name = hostname.endsWith(".") ? hostname.slice(0, -1) : hostname;
  if (literal === undefined && isLocalhost(name)) {
    return reject("blocked_address", "URL host must not be localhost (a loopback name)");
  }
  if (literal === undefined && !isQualified(name)) {
    return reject("host_not_qualified", "URL host must be a fully qualified domain name (contain a dot)");
  }
  const host = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  // WHATWG URL parsing keeps an explicit ":0" (and drops ":443"), so port 0 reaches this check.
  const port = url.port === "" ? 443 : Number(url.port);
  if (!portAllowed(port, options.allowedPorts)) {
    return reject("port_not_allowed", `URL port must be ${describePorts(options.allowedPorts)}`);
  }
  return { ok: true, url, host, port, canonical: canonicalWebhookUrl(url) };
}
