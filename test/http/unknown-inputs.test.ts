// Nothing undeclared gets in: an unknown query parameter or body field is 422 extra_forbidden at its loc,
// as each operation's document says (additionalProperties: false); free-form objects stay free-form, and
// the two operations whose inputs others shape (partner callbacks, the token endpoint) stay lenient.
import t from "tap";
import { createTestTenant, createTestUser, startTestServer, tokenRequest } from "../helpers/server.ts";
import { createTestPartner, signCallback } from "../helpers/partners.ts";

const DOCUMENT = { filename: "claim-4711.pdf", file_size: 482133, mime_type: "application/pdf" };

t.test("unknown inputs", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);

  t.test("an unknown query parameter is 422 extra_forbidden at [query, name]", async (t) => {
    const res = await server.request("/v1/webhooks/deliveries?limit=5&sort=newest", { token: tenant.token });
    t.equal(res.status, 422);
    t.same(await res.json(), {
      detail: [
        { loc: ["query", "sort"], msg: "Extra inputs are not permitted", type: "extra_forbidden", input: "newest" },
      ],
    });
    const known = await server.request("/v1/webhooks/deliveries?limit=5", { token: tenant.token });
    t.equal(known.status, 200, "the declared parameters alone pass");
  });

  t.test("on an operation that declares no query parameter too", async (t) => {
    const res = await server.request("/v1/webhooks/subscriptions?page=2", { token: tenant.token });
    t.equal(res.status, 422);
    t.match(await res.json(), { detail: [{ loc: ["query", "page"], type: "extra_forbidden" }] });
  });

  t.test("an empty value of a declared query parameter is 422 missing", async (t) => {
    const res = await server.request("/v1/webhooks/deliveries?cursor=", { token: tenant.token });
    t.equal(res.status, 422);
    t.match(await res.json(), { detail: [{ loc: ["query", "cursor"], type: "missing" }] });
  });

  t.test("a misspelt body field is 422 extra_forbidden beside the field it should have been", async (t) => {
    const { file_size, ...rest } = DOCUMENT;
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: { ...rest, file_sise: file_size },
    });
    t.equal(res.status, 422);
    const { detail } = (await res.json()) as {
      detail: { loc: unknown[]; type: string; msg: string; input?: unknown }[];
    };
    t.same(
      detail.find((issue) => issue.type === "extra_forbidden"),
      { loc: ["body", "file_sise"], msg: "Extra inputs are not permitted", type: "extra_forbidden", input: file_size },
    );
    t.match(
      detail.find((issue) => issue.type === "missing"),
      { loc: ["body", "file_size"] },
    );
  });

  t.test("an unknown field of a batch item is refused at its place in the list", async (t) => {
    const res = await server.request("/v1/intake/batch", {
      method: "POST",
      token: tenant.token,
      json: { items: [DOCUMENT, { ...DOCUMENT, pages: 3 }] },
    });
    t.equal(res.status, 422);
    t.match(await res.json(), { detail: [{ loc: ["body", "items", 1, "pages"], type: "extra_forbidden", input: 3 }] });
  });

  t.test("every operation with a JSON body refuses unknown top-level fields", async (t) => {
    const subscription = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: tenant.token,
      json: { url: "https://hooks.example.com/review", events: ["*"], secret: "mine" },
    });
    t.equal(subscription.status, 422);
    t.match(await subscription.json(), { detail: [{ loc: ["body", "secret"], type: "extra_forbidden" }] });
    const launch = await server.request("/v1/launch", {
      method: "POST",
      token: tenant.token,
      json: { partner_key: "benefits-co", context: { plan: "gold" } },
    });
    t.equal(launch.status, 422);
    t.match(await launch.json(), { detail: [{ loc: ["body", "context"], type: "extra_forbidden" }] });
    const created = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: tenant.token,
      json: { url: "https://hooks.example.com/review", events: ["*"] },
    });
    const { id } = (await created.json()) as { id: string };
    const disable = await server.request(`/v1/webhooks/subscriptions/${id}/disable`, {
      method: "POST",
      token: tenant.token,
      json: { reason: "maintenance", until: "18:00" },
    });
    t.equal(disable.status, 422);
    t.match(await disable.json(), { detail: [{ loc: ["body", "until"], type: "extra_forbidden" }] });
  });

  t.test("item_metadata stays free-form", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: { ...DOCUMENT, item_metadata: { anything: { nested: [1, 2] }, claim_no: "C-1" } },
    });
    t.equal(res.status, 201);
  });

  t.test("context_values keeps its own rule: CONTEXT_INVALID naming the key", async (t) => {
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const res = await server.request("/v1/launch", {
      method: "POST",
      token: tenant.token,
      json: { partner_key: partner.partnerKey, context_values: { employee_id: "E-1", shoe_size: 44 } },
    });
    t.equal(res.status, 422);
    t.match(await res.json(), { error: { code: "CONTEXT_INVALID", details: { keys: ["shoe_size"] } } });
  });

  t.test("a partner callback ignores fields and query parameters it does not read", async (t) => {
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const body = {
      tenant_id: tenant.tenantId,
      payload: { event: "user.provisioned", event_id: `evt-${Date.now()}`, extra: { any: "shape" } },
    };
    const res = await server.request(`/v1/callbacks/partner/${partner.partnerKey}?source=hr-suite`, {
      method: "POST",
      headers: { "X-Callback-Signature": signCallback(partner.callbackSecret, partner.partnerKey, body) },
      json: { ...body, sent_by: "hr-suite", attempt: 1 },
    });
    t.equal(res.status, 202);
  });

  t.test("the token endpoint ignores unrecognised parameters (RFC 6749 §3.2)", async (t) => {
    const user = await createTestUser(server.services, tenant.tenantId);
    const res = await server.request("/token?client=cli", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "password",
        username: user.username,
        password: user.password,
        device: "laptop",
      }).toString(),
    });
    t.equal(res.status, 200);
    t.equal(((await res.json()) as { token_type: string }).token_type, "bearer");
    t.equal(
      (
        await tokenRequest(server, {
          grant_type: "password",
          username: user.username,
          password: user.password,
          nonce: "x",
        })
      ).status,
      200,
    );
  });

  t.test("none of it was an unexpected error", async (t) => t.same(server.errors, []));
});
