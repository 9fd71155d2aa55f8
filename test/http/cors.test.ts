// CORS: only the origins of CORS_ALLOWED_ORIGINS (none by default) get CORS headers; their preflights are
// answered before authentication with the methods and headers the API takes, and their answers expose the
// headers an integrator reads.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { loadConfig } from "../../foundation/config.ts";

const APP = "https://app.example.com";

const preflight = (method: string, headers: string) => ({
  method: "OPTIONS",
  headers: { Origin: APP, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers },
});

t.test("without CORS_ALLOWED_ORIGINS no origin gets CORS headers", async (t) => {
  const server = await startTestServer(t);
  const res = await server.request("/v1/intake/submit", preflight("POST", "authorization,content-type"));
  t.equal(res.headers.get("access-control-allow-origin"), null);
  t.not(res.status, 204);
  const get = await server.request("/v1/health", { headers: { Origin: APP } });
  t.equal(get.headers.get("access-control-allow-origin"), null);
});

t.test("an allowed origin's preflight is answered 204 before authentication", async (t) => {
  const server = await startTestServer(t, { env: { CORS_ALLOWED_ORIGINS: `${APP}, http://localhost:5173` } });
  const res = await server.request(
    "/v1/intake/submit",
    preflight("POST", "authorization,content-type,idempotency-key"),
  );
  t.equal(res.status, 204);
  t.equal(res.headers.get("access-control-allow-origin"), APP);
  t.match(res.headers.get("access-control-allow-methods"), /\bPOST\b/);
  t.match(res.headers.get("access-control-allow-methods"), /\bDELETE\b/);
  for (const header of ["Authorization", "Content-Type", "Idempotency-Key", "X-Request-Id"])
    t.match(res.headers.get("access-control-allow-headers"), new RegExp(`\\b${header}\\b`), header);
  t.equal(res.headers.get("access-control-allow-credentials"), null, "tokens, not cookies: no credentials mode");
  t.match(res.headers.get("vary"), /Origin/);
});

t.test(
  "preflights count against the client address's open-route limit (RATE_LIMIT_ANON_PER_MINUTE, scope address)",
  async (t) => {
    const server = await startTestServer(t, { env: { CORS_ALLOWED_ORIGINS: APP, RATE_LIMIT_ANON_PER_MINUTE: "3" } });
    for (let i = 0; i < 3; i++) {
      const res = await server.request("/v1/intake/submit", preflight("POST", "authorization,content-type"));
      t.equal(res.status, 204, `preflight ${i + 1}`);
      t.equal(res.headers.get("ratelimit-remaining"), String(2 - i));
    }
    const refused = await server.request("/v1/intake/submit", preflight("POST", "authorization,content-type"));
    t.equal(refused.status, 429, "one more preflight is refused");
    t.ok(Number(refused.headers.get("retry-after")) >= 1);
    t.match(await refused.json(), { error: { code: "RATE_LIMITED", details: { scope: "address", limit: 3 } } });
    t.equal(
      (await server.request("/.well-known/jwks.json")).status,
      429,
      "the same allowance as the other open routes of that address",
    );
  },
);

t.test("an allowed origin's answers expose the headers integrators read", async (t) => {
  const server = await startTestServer(t, { env: { CORS_ALLOWED_ORIGINS: APP } });
  const tenant = await createTestTenant(server.services);
  const res = await server.request("/v1/webhooks/subscriptions", { token: tenant.token, headers: { Origin: APP } });
  t.equal(res.status, 200);
  t.equal(res.headers.get("access-control-allow-origin"), APP);
  const exposed = res.headers.get("access-control-expose-headers") ?? "";
  for (const header of [
    "X-Request-Id",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "Idempotent-Replayed",
    "Retry-After",
  ])
    t.match(exposed, new RegExp(`\\b${header}\\b`), header);
});

t.test("another origin gets no CORS headers, and its preflight is not answered 204", async (t) => {
  const server = await startTestServer(t, { env: { CORS_ALLOWED_ORIGINS: APP } });
  const res = await server.request("/v1/intake/submit", {
    method: "OPTIONS",
    headers: { Origin: "https://evil.example.net", "Access-Control-Request-Method": "POST" },
  });
  t.equal(res.headers.get("access-control-allow-origin"), null);
  t.not(res.status, 204);
});

t.test("CORS_ALLOWED_ORIGINS takes origins only", async (t) => {
  t.same(loadConfig({ CORS_ALLOWED_ORIGINS: "https://App.example.com,http://localhost:5173" }).corsAllowedOrigins, [
    "https://app.example.com",
    "http://localhost:5173",
  ]);
  t.same(loadConfig({}).corsAllowedOrigins, []);
  for (const bad of ["*", "https://app.example.com/path", "app.example.com", "ftp://files.example.com"])
    t.throws(() => loadConfig({ CORS_ALLOWED_ORIGINS: bad }), { message: /CORS_ALLOWED_ORIGINS/ }, bad);
});
