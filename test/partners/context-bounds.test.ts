// Launch and switch context values are bounded by the document: long values, long keys or too many keys
// are 422 CONTEXT_INVALID before anything is decided, so no request can produce a giant redirect_url.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";

t.test("context values are bounded on launch and switch", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const partner = await createTestPartner(server.services, {
    contextKeys: ["employee_id", "plan"],
    entitle: [tenant.tenantId],
  });
  const call = (path: string, keyField: string, context: unknown) =>
    server.request(path, {
      method: "POST",
      token: tenant.token,
      json: { [keyField]: partner.partnerKey, context_values: context },
    });

  for (const [path, keyField] of [
    ["/v1/launch", "partner_key"],
    ["/v1/partner-switch", "target_partner_key"],
  ] as const) {
    t.test(`${path}: a 100 KB value is 422 CONTEXT_INVALID naming the key`, async (t) => {
      const res = await call(path, keyField, { employee_id: "x".repeat(100_000), plan: "gold" });
      t.equal(res.status, 422);
      const body = await res.json();
      t.equal(body.error.code, "CONTEXT_INVALID");
      t.same(body.error.details.keys, ["employee_id"]);
    });

    t.test(`${path}: a value of 512 characters is accepted, 513 is refused`, async (t) => {
      const ok = await call(path, keyField, { employee_id: "x".repeat(512) });
      t.equal(ok.status, 200);
      const decision = await ok.json();
      t.ok(decision.redirect_url.length < 4000, `redirect_url stays short (${decision.redirect_url.length})`);
      t.equal((await call(path, keyField, { employee_id: "x".repeat(513) })).status, 422);
    });

    t.test(`${path}: a key longer than 64 characters or more than 50 keys is 422 CONTEXT_INVALID`, async (t) => {
      const longKey = await call(path, keyField, { ["k".repeat(65)]: "v" });
      t.equal(longKey.status, 422);
      t.equal((await longKey.json()).error.code, "CONTEXT_INVALID");
      const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`key${i}`, i]));
      const tooMany = await call(path, keyField, many);
      t.equal(tooMany.status, 422);
      t.equal((await tooMany.json()).error.code, "CONTEXT_INVALID");
    });

    t.test(`${path}: an integer beyond 2^53-1 is 422 CONTEXT_INVALID`, async (t) => {
      const res = await call(path, keyField, { employee_id: 2 ** 60 });
      t.equal(res.status, 422);
      t.equal((await res.json()).error.code, "CONTEXT_INVALID");
    });
  }
});
