// The contract package's typed client (openapi/package/src) against the real service: at least one call
// per tag of the document, each answer checked as the client types it.
import t from "tap";
import { createIntegratorClient, withIdempotencyKey } from "../../openapi/package/src/index.ts";
import { createTestTenant, createTestUser, startTestServer } from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";
import { loadDocument } from "../../http/openapi-document.ts";

t.test("the typed client calls at least one operation of every tag", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const api = createIntegratorClient({ baseUrl: `${server.baseUrl}/`, token: () => tenant.token });
  const called = new Set<string>();

  t.test("auth: a token by the password grant, the JWKS, and who the token is", async (t) => {
    const user = await createTestUser(server.services, tenant.tenantId);
    const anonymous = createIntegratorClient({ baseUrl: server.baseUrl });
    const token = await anonymous.POST("/token", {
      body: { grant_type: "password", username: user.username, password: user.password },
      bodySerializer: (body) => new URLSearchParams(body as Record<string, string>),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    t.equal(token.response.status, 200);
    t.equal(token.data?.token_type, "bearer");
    const jwks = await anonymous.GET("/.well-known/jwks.json");
    t.ok((jwks.data?.keys.length ?? 0) > 0);
    const asUser = createIntegratorClient({ baseUrl: server.baseUrl, token: token.data?.access_token });
    const me = await asUser.GET("/v1/me");
    t.equal(me.response.status, 200);
    t.equal(me.data?.tenant_id, tenant.tenantId);
    t.same(me.data?.roles, ["client_admin"]);
    t.ok(me.data?.expires_at && Date.parse(me.data.expires_at) > Date.now(), "the token's expiry, in the future");
    called.add("auth");
  });

  t.test("intake: submit with an Idempotency-Key, replay it, read the submission back", async (t) => {
    const body = { filename: "claim-4711.pdf", file_size: 482133, mime_type: "application/pdf" };
    const first = await api.POST("/v1/intake/submit", { body, ...withIdempotencyKey("typed-client-1") });
    t.equal(first.response.status, 201);
    const again = await api.POST("/v1/intake/submit", { body, ...withIdempotencyKey("typed-client-1") });
    t.equal(again.response.headers.get("Idempotent-Replayed"), "true");
    t.equal(again.data?.id, first.data?.id);
    const detail = await api.GET("/v1/intake/submissions/{submission_id}", {
      params: { path: { submission_id: first.data?.id ?? "" } },
    });
    t.equal(detail.data?.items.length, 1);
    const missing = await api.GET("/v1/intake/submissions/{submission_id}", {
      params: { path: { submission_id: "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69" } },
    });
    t.equal(missing.response.status, 404);
    const notFound = missing.error && "error" in missing.error ? missing.error.error.code : undefined;
    t.equal(notFound, "NOT_FOUND", "errors are typed by the document too");
    called.add("intake");
  });

  t.test("webhooks: subscribe, list, list deliveries, unsubscribe", async (t) => {
    const created = await api.POST("/v1/webhooks/subscriptions", {
      body: { url: "https://hooks.example.com/review", events: ["intake.submitted"] },
    });
    t.equal(created.response.status, 201);
    t.match(created.data?.secret, /^whsec_/);
    const listed = await api.GET("/v1/webhooks/subscriptions");
    t.equal(listed.data?.total, 1);
    const deliveries = await api.GET("/v1/webhooks/deliveries", { params: { query: { limit: 10 } } });
    t.equal(deliveries.response.status, 200);
    const deleted = await api.DELETE("/v1/webhooks/subscriptions/{subscription_id}", {
      params: { path: { subscription_id: created.data?.id ?? "" } },
    });
    t.equal(deleted.response.status, 204);
    called.add("webhooks");
  });

  t.test("health: the health report and the readiness probe", async (t) => {
    const health = await api.GET("/v1/health");
    t.equal(health.response.status, 200);
    t.ok(["healthy", "degraded", "unhealthy"].includes(health.data?.status ?? ""));
    const ready = await api.GET("/v1/readyz");
    t.ok([200, 503].includes(ready.response.status));
    called.add("health");
  });

  t.test("partners: a launch routed to an entitled partner", async (t) => {
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const launch = await api.POST("/v1/launch", {
      body: { partner_key: partner.partnerKey, context_values: { plan: "gold" } },
    });
    t.equal(launch.response.status, 200);
    t.equal(launch.data?.decision_result, "routed");
    t.match(launch.data?.redirect_url, /assertion=/);
    called.add("partners");
  });

  t.teardown(() => {
    const tags = (loadDocument().tags ?? []).map((tag) => tag.name);
    const missed = tags.filter((tag) => !called.has(tag));
    if (missed.length > 0) throw new Error(`the typed client called no operation of the tags ${missed.join(", ")}`);
  });
});
