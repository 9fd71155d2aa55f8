// Rate limits: per principal on protected routes, per client address on open routes and for requests
// without a valid token, probes in a bucket of their own; 429 RATE_LIMITED with Retry-After and
// RateLimit-*; counters in memory or shared through PostgreSQL.
import { randomUUID } from "node:crypto";
import t, { type Test } from "tap";
import { addressKey } from "../../http/rate-limit.ts";
import {
  createTestTenant,
  startReplica,
  startTestServer,
  type TestServer,
  pollWithToken,
  tokenRequest,
} from "../helpers/server.ts";

const limits = (
  perMinute: number,
  anonPerMinute: number,
  probePerMinute: number,
  extra: Record<string, string> = {},
) => ({
  RATE_LIMIT_PER_MINUTE: String(perMinute),
  RATE_LIMIT_ANON_PER_MINUTE: String(anonPerMinute),
  RATE_LIMIT_PROBE_PER_MINUTE: String(probePerMinute),
  ...extra,
});

/** A password grant that fails (an unknown user). */
const wrongPassword = (server: TestServer) =>
  tokenRequest(server, { grant_type: "password", username: "nobody", password: "wrong" });

async function assertRateLimited(t: Test, res: Response, limit: number, scope: string): Promise<void> {
  t.equal(res.status, 429);
  const body = await res.json();
  t.equal(body.error.code, "RATE_LIMITED");
  t.same(body.error.details, { scope, limit, window_seconds: 60 });
  t.equal(body.request_id, res.headers.get("x-request-id"));
  const retryAfter = Number(res.headers.get("retry-after"));
  t.ok(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
    `Retry-After ${retryAfter} is whole seconds within the window`,
  );
  t.equal(res.headers.get("ratelimit-limit"), String(limit));
  t.equal(res.headers.get("ratelimit-remaining"), "0");
  t.ok(Number(res.headers.get("ratelimit-reset")) >= 1);
}

t.test(
  "a principal past RATE_LIMIT_PER_MINUTE is answered 429 RATE_LIMITED with Retry-After and RateLimit-*",
  async (t) => {
    const server = await startTestServer(t, { env: limits(3, 100, 100) });
    const tenant = await createTestTenant(server.services);
    for (let i = 0; i < 3; i++) {
      const res = await pollWithToken(server, tenant.token);
      t.equal(res.status, 404, `request ${i + 1} is served`);
      t.equal(res.headers.get("ratelimit-limit"), "3");
      t.equal(res.headers.get("ratelimit-remaining"), String(2 - i));
      const reset = Number(res.headers.get("ratelimit-reset"));
      t.ok(reset >= 1 && reset <= 60);
    }
    await assertRateLimited(t, await pollWithToken(server, tenant.token), 3, "principal");
  },
);

t.test("successful responses carry the RateLimit-* headers", async (t) => {
  const server = await startTestServer(t, { env: limits(5, 100, 100) });
  const tenant = await createTestTenant(server.services);
  const res = await server.request("/v1/intake/submit", {
    method: "POST",
    token: tenant.token,
    json: { filename: "a.pdf", file_size: 1, mime_type: "application/pdf" },
  });
  t.equal(res.status, 201);
  t.equal(res.headers.get("ratelimit-limit"), "5");
  t.equal(res.headers.get("ratelimit-remaining"), "4");
});

t.test("each principal (subject within tenant) has its own count", async (t) => {
  const server = await startTestServer(t, { env: limits(2, 100, 100) });
  const first = await createTestTenant(server.services);
  const second = await createTestTenant(server.services);
  const { token: sameTenantOtherSubject } = await server.services.tokens.issue({
    subject: "another-user",
    tenantId: first.tenantId,
    roles: ["client_admin"],
  });
  await pollWithToken(server, first.token);
  await pollWithToken(server, first.token);
  t.equal((await pollWithToken(server, first.token)).status, 429);
  t.equal((await pollWithToken(server, second.token)).status, 404, "another tenant's principal is still served");
  t.equal(
    (await pollWithToken(server, sameTenantOtherSubject)).status,
    404,
    "another subject of the same tenant is still served",
  );
});

t.test("open routes are limited per client address (RATE_LIMIT_ANON_PER_MINUTE)", async (t) => {
  const server = await startTestServer(t, { env: limits(100, 2, 100) });
  for (let i = 0; i < 2; i++) {
    const res = await wrongPassword(server);
    t.equal(res.status, 400, "invalid_grant, but counted");
    t.equal(res.headers.get("ratelimit-limit"), "2");
  }
  await assertRateLimited(t, await wrongPassword(server), 2, "token");
  for (let i = 0; i < 2; i++) t.equal((await server.request("/.well-known/jwks.json")).status, 200);
  await assertRateLimited(t, await server.request("/.well-known/jwks.json"), 2, "address");
  for (let i = 0; i < 2; i++) t.equal((await server.request("/v1/nothing-here")).status, 404);
  await assertRateLimited(t, await server.request("/v1/nothing-here"), 2, "unmatched");
});

t.test("junk on unknown routes starves neither token issuance nor partner callbacks", async (t) => {
  const server = await startTestServer(t, { env: limits(100, 5, 100, { RATE_LIMIT_CALLBACK_PER_MINUTE: "3" }) });
  for (let i = 0; i < 5; i++) await (await server.request(`/v1/junk-${i}`)).arrayBuffer();
  t.equal((await server.request("/v1/junk-more")).status, 429, "the address is over its limit on unknown routes");
  t.equal((await wrongPassword(server)).status, 400, "the token endpoint still answers (invalid_grant)");
  const callback = () =>
    server.request("/v1/callbacks/partner/no-such-partner", {
      method: "POST",
      json: { tenant_id: randomUUID(), payload: { event: "x" }, signature: "00" },
    });
  for (let i = 0; i < 3; i++) {
    const res = await callback();
    t.equal(res.status, 400, "callbacks answer (CALLBACK_SIGNATURE_INVALID here)");
    t.equal(res.headers.get("ratelimit-limit"), "3", "in their own bucket (RATE_LIMIT_CALLBACK_PER_MINUTE)");
  }
  await assertRateLimited(t, await callback(), 3, "callback");
  t.equal((await wrongPassword(server)).status, 400, "callbacks over their limit leave the token endpoint alone");
});

t.test("121 junk-token requests from one address do not lock valid tokens out of that address", async (t) => {
  const server = await startTestServer(t, { env: limits(1000, 120, 100) });
  const tenant = await createTestTenant(server.services);
  const other = await createTestTenant(server.services);
  let last: Response | undefined;
  for (let i = 0; i < 121; i++) {
    last = await pollWithToken(server, `junk-${i}`);
    await last.arrayBuffer();
  }
  t.equal(last?.status, 429, "the junk itself is limited");
  const served = await pollWithToken(server, tenant.token);
  t.equal(served.status, 404, "a valid token is served (404: the submission does not exist)");
  t.equal(served.headers.get("ratelimit-limit"), "1000", "and counted in its principal's bucket only");
  t.equal((await pollWithToken(server, other.token)).status, 404, "so is another tenant's token");
});

t.test(
  "requests answered 401 count against the address and 403s against their principal, each in a bucket of its own",
  async (t) => {
    const server = await startTestServer(t, { env: limits(100, 3, 100) });
    const tenant = await createTestTenant(server.services);
    const viewer = await createTestTenant(server.services, ["viewer"]);
    t.equal((await pollWithToken(server, "not-a-token")).status, 401);
    t.equal((await server.request("/v1/intake/submissions/x")).status, 401, "no token at all counts too");
    t.equal((await pollWithToken(server, "again-not-a-token")).status, 401);
    await assertRateLimited(t, await pollWithToken(server, "still-not-a-token"), 3, "unauthenticated");
    for (let i = 0; i < 3; i++) t.equal((await pollWithToken(server, viewer.token)).status, 403);
    await assertRateLimited(t, await pollWithToken(server, viewer.token), 3, "forbidden");
    const served = await pollWithToken(server, tenant.token);
    t.equal(served.status, 404, "a valid token from the same address is served");
    t.equal(served.headers.get("ratelimit-remaining"), "99", "its principal's allowance was not spent by failures");
    t.equal(
      (await wrongPassword(server)).status,
      400,
      "the open routes' count is separate: the token endpoint still answers",
    );
  },
);

t.test(
  "probes have their own bucket: a busy address leaves readiness answering, and probes cannot exhaust the others",
  async (t) => {
    const server = await startTestServer(t, { env: limits(100, 2, 3) });
    await wrongPassword(server);
    await wrongPassword(server);
    t.equal((await wrongPassword(server)).status, 429, "the address is over its open-route limit");
    const health = await server.request("/v1/health");
    t.equal(health.status, 200, "health still answers");
    t.equal(health.headers.get("ratelimit-limit"), "3");
    t.equal(
      (await server.request("/v1/readyz")).status,
      503,
      "readyz still answers with its report (no worker here, so degraded)",
    );
    t.equal((await server.request("/v1/health")).status, 200);
    await assertRateLimited(t, await server.request("/v1/readyz"), 3, "probe");
  },
);

t.test("RATE_LIMIT_STORE=postgres shares one count between replicas", async (t) => {
  const first = await startTestServer(t, { env: limits(4, 100, 100, { RATE_LIMIT_STORE: "postgres" }) });
  const second = await startReplica(t, first, limits(4, 100, 100, { RATE_LIMIT_STORE: "postgres" }));
  const tenant = await createTestTenant(first.services);
  t.equal((await pollWithToken(first, tenant.token)).status, 404);
  t.equal((await pollWithToken(second, tenant.token)).status, 404);
  t.equal((await pollWithToken(first, tenant.token)).status, 404);
  const fourth = await pollWithToken(second, tenant.token);
  t.equal(fourth.status, 404);
  t.equal(fourth.headers.get("ratelimit-remaining"), "0", "the second replica saw the first one's requests");
  await assertRateLimited(t, await pollWithToken(first, tenant.token), 4, "principal");
  await assertRateLimited(t, await pollWithToken(second, tenant.token), 4, "principal");
  const rows = await first.services
    .db("integrator.rate_limits")
    .where("key", `rl:principal:${tenant.tenantId}:${tenant.subject}`);
  t.equal(rows.length, 1, "the counter lives in integrator.rate_limits");
  t.ok(rows[0].points >= 5);
});

t.test("with RATE_LIMIT_STORE=postgres, a failing store falls back to in-memory limits", async (t) => {
  const server = await startTestServer(t, { env: limits(2, 100, 100, { RATE_LIMIT_STORE: "postgres" }) });
  const tenant = await createTestTenant(server.services);
  await server.services.db.raw("alter table integrator.rate_limits rename to rate_limits_gone");
  t.teardown(() => server.services.db.raw("alter table integrator.rate_limits_gone rename to rate_limits"));
  t.equal((await pollWithToken(server, tenant.token)).status, 404);
  t.equal((await pollWithToken(server, tenant.token)).status, 404);
  t.equal((await pollWithToken(server, tenant.token)).status, 429, "still limited without the table");
});

t.test("client address keys: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 by /64", async (t) => {
  t.equal(addressKey("203.0.113.7"), "203.0.113.7");
  t.equal(addressKey("::ffff:203.0.113.7"), "203.0.113.7");
  t.equal(addressKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  t.equal(addressKey("2001:db8:1:2:bbbb::9"), addressKey("2001:db8:1:2:aaaa::1"), "one /64 is one client");
  t.not(addressKey("2001:db8:1:3::1"), addressKey("2001:db8:1:2::1"));
  t.equal(addressKey(undefined), "unknown");
});

t.test("TRUST_PROXY makes X-Forwarded-For the client address; without it the header is ignored", async (t) => {
  const trusting = await startTestServer(t, { env: limits(100, 1, 100, { TRUST_PROXY: "loopback" }) });
  const forwarded = (server: TestServer, address: string) =>
    server.request("/.well-known/jwks.json", { headers: { "X-Forwarded-For": address } });
  t.equal((await forwarded(trusting, "198.51.100.1")).status, 200);
  t.equal((await forwarded(trusting, "198.51.100.1")).status, 429);
  t.equal((await forwarded(trusting, "198.51.100.2")).status, 200, "another client behind the proxy has its own count");

  const direct = await startTestServer(t, { env: limits(100, 1, 100) });
  t.equal((await forwarded(direct, "198.51.100.1")).status, 200);
  t.equal((await forwarded(direct, "198.51.100.2")).status, 429, "a spoofed header does not escape the limit");
});
