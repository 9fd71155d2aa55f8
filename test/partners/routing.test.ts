// POST /v1/launch and POST /v1/partner-switch: routing decisions, the signed assertion, context values,
// correlation ids, the audit trail and the switch's Idempotency-Key (startLaunch and
// switchPartner in openapi/openapi.yaml; docs/decisions.md §7).
import t from "tap";
import pg from "pg";
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";
import { changePartnerStatus, entitlePartner } from "../../handlers/partners/registry.ts";
import { SWITCH_ROUTE } from "../../handlers/partners/routing.ts";
import { idempotencyLockKey } from "../../http/idempotency.ts";
import { listAudit } from "../../db/audit.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Decision {
  decision_id: string;
  decision_result: "routed" | "denied";
  partner_key: string;
  redirect_url?: string;
  reason?: string;
  correlation_id: string;
  expires_at?: string;
}

function post(
  server: TestServer,
  tenant: TestTenant,
  path: string,
  json: unknown,
  headers: Record<string, string> = {},
) {
  return server.request(path, { method: "POST", token: tenant.token, json, headers });
}

const launch = (server: TestServer, tenant: TestTenant, json: unknown, headers: Record<string, string> = {}) =>
  post(server, tenant, "/v1/launch", json, headers);
const switchTo = (server: TestServer, tenant: TestTenant, json: unknown, headers: Record<string, string> = {}) =>
  post(server, tenant, "/v1/partner-switch", json, headers);

function assertionOf(decision: Decision): string {
  const assertion = new URL(decision.redirect_url ?? "").searchParams.get("assertion");
  if (!assertion) throw new Error(`no assertion in ${decision.redirect_url}`);
  return assertion;
}

async function decisionCount(server: TestServer, tenantId: string): Promise<number> {
  const row = await server.services
    .db("integrator.routing_decisions")
    .where({ tenant_id: tenantId })
    .count<{ count: number }[]>("* as count")
    .first();
  return Number(row?.count ?? 0);
}

t.test("launch", async (t) => {
  const server = await startTestServer(t);

  t.test(
    "an entitled tenant and an active partner: 200 routed, redirect_url is the launch URL with an assertion, and expires_at",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const res = await launch(server, tenant, { partner_key: partner.partnerKey });
      t.equal(res.status, 200);
      const decision = (await res.json()) as Decision;
      t.equal(decision.decision_result, "routed");
      t.equal(decision.partner_key, partner.partnerKey);
      t.match(decision.decision_id, UUID);
      t.notOk("reason" in decision);
      const redirect = new URL(decision.redirect_url ?? "");
      t.equal(`${redirect.origin}${redirect.pathname}`, partner.launchUrl);
      t.same([...redirect.searchParams.keys()], ["assertion"]);
      t.match(decision.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      t.equal(
        Date.parse(decision.expires_at ?? ""),
        (decodeJwt(assertionOf(decision)).exp ?? 0) * 1000,
        "expires_at is the assertion's exp",
      );
    },
  );

  t.test(
    "a partner verifies the assertion with nothing but the JWKS fetched from the service: ES256, aud = partner key, sub, tenant_id, roles, ctx, jti, 120 s",
    async (t) => {
      const tenant = await createTestTenant(server.services, ["client_admin"]);
      const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const decision = (await (
        await launch(server, tenant, {
          partner_key: partner.partnerKey,
          context_values: { employee_id: "E-7", plan: 3, is_manager: true },
        })
      ).json()) as Decision;
      const assertion = assertionOf(decision);

      // The partner side: only the public JWKS over HTTP, its own key as the audience.
      const jwks = createRemoteJWKSet(new URL(`${server.baseUrl}/.well-known/jwks.json`));
      const { payload, protectedHeader } = await jwtVerify(assertion, jwks, {
        audience: partner.partnerKey,
        algorithms: ["ES256"],
      });
      t.equal(protectedHeader.alg, "ES256");
      t.equal(payload.aud, partner.partnerKey);
      t.equal(payload.sub, tenant.subject);
      t.equal(payload.tenant_id, tenant.tenantId);
      t.same(payload.roles, ["client_admin"]);
      t.same(payload.ctx, { employee_id: "E-7", plan: 3, is_manager: true });
      t.match(payload.jti, UUID);
      t.equal(payload.iss, server.services.tokens.issuer);
      t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 120, "lifetime 120 s");
      t.equal(payload.decision_id, decision.decision_id);
      t.equal(payload.correlation_id, decision.correlation_id);

      await t.rejects(
        jwtVerify(assertion, jwks, { audience: "some-other-partner" }),
        "another partner's audience does not accept it",
      );
      t.equal(
        decodeProtectedHeader(assertion).kid,
        (server.services.tokens.jwks().keys[0] as { kid: string }).kid,
        "signed with the published key",
      );
    },
  );

  t.test("the assertion is not an access token: the API answers 401 to it", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const decision = (await (await launch(server, tenant, { partner_key: partner.partnerKey })).json()) as Decision;
    const res = await server.request("/v1/launch", {
      method: "POST",
      token: assertionOf(decision),
      json: { partner_key: partner.partnerKey },
    });
    t.equal(res.status, 401);
  });

  t.test("without context_values the ctx claim is an empty object", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const decision = (await (await launch(server, tenant, { partner_key: partner.partnerKey })).json()) as Decision;
    t.same(decodeJwt(assertionOf(decision)).ctx, {});
  });

  t.test("query parameters of the partner's launch URL are kept beside assertion", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, {
      launchUrl: "https://sso.partner.example.com/start?src=hub&lang=de",
      entitle: [tenant.tenantId],
    });
    const decision = (await (await launch(server, tenant, { partner_key: partner.partnerKey })).json()) as Decision;
    const redirect = new URL(decision.redirect_url ?? "");
    t.equal(redirect.searchParams.get("src"), "hub");
    t.equal(redirect.searchParams.get("lang"), "de");
    t.ok(redirect.searchParams.get("assertion"));
  });

  t.test("a tenant not entitled to the partner: 200 denied with reason NOT_ENTITLED and no redirect_url", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services);
    const res = await launch(server, tenant, { partner_key: partner.partnerKey });
    t.equal(res.status, 200);
    const decision = (await res.json()) as Decision;
    t.equal(decision.decision_result, "denied");
    t.equal(decision.reason, "NOT_ENTITLED");
    t.notOk("redirect_url" in decision);
    t.notOk("expires_at" in decision);
  });

  t.test("a paused partner: 200 denied with reason PARTNER_PAUSED; once resumed it routes again", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    await changePartnerStatus(server.services, partner.partnerKey, "paused");
    const paused = (await (await launch(server, tenant, { partner_key: partner.partnerKey })).json()) as Decision;
    t.equal(paused.decision_result, "denied");
    t.equal(paused.reason, "PARTNER_PAUSED");
    t.notOk("redirect_url" in paused);
    await changePartnerStatus(server.services, partner.partnerKey, "active");
    t.equal(
      ((await (await launch(server, tenant, { partner_key: partner.partnerKey })).json()) as Decision).decision_result,
      "routed",
    );
  });

  t.test(
    "a tenant not entitled to a paused partner is told NOT_ENTITLED (it learns nothing about the partner's state)",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const partner = await createTestPartner(server.services);
      await changePartnerStatus(server.services, partner.partnerKey, "paused");
      t.equal(
        ((await (await launch(server, tenant, { partner_key: partner.partnerKey })).json()) as Decision).reason,
        "NOT_ENTITLED",
      );
    },
  );

  t.test(
    "an unknown partner key is answered exactly like a partner the tenant is not entitled to (no existence oracle)",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const other = await createTestTenant(server.services);
      const existing = await createTestPartner(server.services, { entitle: [other.tenantId] });
      // Context keys neither partner knows: checking them against the existing partner would tell it apart.
      const context = { context_values: { not_a_key: "x" } };
      const answers = [];
      for (const partnerKey of ["no-such-partner", existing.partnerKey]) {
        const res = await launch(
          server,
          tenant,
          { partner_key: partnerKey, ...context },
          { "X-Correlation-Id": "c-1" },
        );
        const decision = (await res.json()) as Decision;
        t.equal(decision.partner_key, partnerKey);
        answers.push({
          status: res.status,
          contentType: res.headers.get("content-type"),
          correlation: res.headers.get("x-correlation-id"),
          body: { ...decision, decision_id: "*", partner_key: "*" },
        });
      }
      t.same(answers[0], answers[1]);
      t.match(answers[0], { status: 200, body: { decision_result: "denied", reason: "NOT_ENTITLED" } });
      t.equal(await decisionCount(server, tenant.tenantId), 2, "both decisions are recorded");
      const audit = await listAudit(server.services.db, tenant.tenantId, "partner.launch");
      t.equal(audit.length, 2, "both are audited");
    },
  );

  t.test("X-Correlation-Id is echoed in the response header and in correlation_id", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    for (const partnerKey of [partner.partnerKey]) {
      const res = await launch(server, tenant, { partner_key: partnerKey }, { "X-Correlation-Id": "flow-4711" });
      t.equal(res.headers.get("x-correlation-id"), "flow-4711");
      t.equal(((await res.json()) as Decision).correlation_id, "flow-4711");
    }
    const denied = await launch(
      server,
      tenant,
      { partner_key: (await createTestPartner(server.services)).partnerKey },
      { "X-Correlation-Id": "flow-4712" },
    );
    t.equal(denied.headers.get("x-correlation-id"), "flow-4712", "denied decisions echo it too");
    t.equal(((await denied.json()) as Decision).correlation_id, "flow-4712");
  });

  t.test("without X-Correlation-Id a UUID is generated and sent in the header and in correlation_id", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const first = await launch(server, tenant, { partner_key: partner.partnerKey });
    const second = await launch(server, tenant, { partner_key: partner.partnerKey });
    const a = (await first.json()) as Decision;
    const b = (await second.json()) as Decision;
    t.match(a.correlation_id, UUID);
    t.equal(first.headers.get("x-correlation-id"), a.correlation_id);
    t.not(a.correlation_id, b.correlation_id, "a new one per call");
  });

  t.test(
    "string, integer and boolean values of the partner's context keys are accepted and become the ctx claim",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const partner = await createTestPartner(server.services, {
        contextKeys: ["employee_id", "grade", "remote"],
        entitle: [tenant.tenantId],
      });
      const context = { employee_id: "Zoë-42", grade: -3, remote: false };
      const decision = (await (
        await launch(server, tenant, { partner_key: partner.partnerKey, context_values: context })
      ).json()) as Decision;
      t.equal(decision.decision_result, "routed");
      t.same(decodeJwt(assertionOf(decision)).ctx, context);
    },
  );

  t.test("a context key the partner does not accept is 422 CONTEXT_INVALID naming the key", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, {
      contextKeys: ["employee_id"],
      entitle: [tenant.tenantId],
    });
    const res = await launch(server, tenant, {
      partner_key: partner.partnerKey,
      context_values: { employee_id: "E-1", salary_band: "B" },
    });
    t.equal(res.status, 422);
    const body = await res.json();
    t.equal(body.error.code, "CONTEXT_INVALID");
    t.same(body.error.details.keys, ["salary_band"]);
    t.same(
      body.error.details.errors.map((issue: { loc: unknown[] }) => issue.loc),
      [["body", "context_values", "salary_band"]],
    );
    t.match(body.error.message, /salary_band/);
    t.equal(await decisionCount(server, tenant.tenantId), 0, "no decision is recorded");
  });

  t.test("every offending key is named, not just the first", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, {
      contextKeys: ["employee_id"],
      entitle: [tenant.tenantId],
    });
    const res = await launch(server, tenant, {
      partner_key: partner.partnerKey,
      context_values: { alpha: 1, employee_id: "E-1", beta: true },
    });
    t.equal(res.status, 422);
    t.same((await res.json()).error.details.keys.sort(), ["alpha", "beta"]);
  });

  const wrongValues: [string, unknown][] = [
    ["a float", 1.5],
    ["null", null],
    ["an array", ["E-1"]],
    ["an object", { id: "E-1" }],
  ];
  for (const [what, value] of wrongValues) {
    t.test(`${what} as a context value is 422 CONTEXT_INVALID naming the key`, async (t) => {
      const tenant = await createTestTenant(server.services);
      const partner = await createTestPartner(server.services, {
        contextKeys: ["employee_id", "plan"],
        entitle: [tenant.tenantId],
      });
      const res = await launch(server, tenant, {
        partner_key: partner.partnerKey,
        context_values: { plan: "gold", employee_id: value },
      });
      t.equal(res.status, 422);
      const body = await res.json();
      t.equal(body.error.code, "CONTEXT_INVALID");
      t.same(body.error.details.keys, ["employee_id"]);
      t.same(body.error.details.errors[0].loc, ["body", "context_values", "employee_id"]);
      t.match(body.error.details.errors[0].msg, /string, integer or boolean/);
    });
  }

  t.test("context_values that is not an object is 422 CONTEXT_INVALID", async (t) => {
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    for (const value of [["employee_id"], "employee_id=1", null]) {
      const res = await launch(server, tenant, { partner_key: partner.partnerKey, context_values: value });
      t.equal(res.status, 422, JSON.stringify(value));
      const body = await res.json();
      t.equal(body.error.code, "CONTEXT_INVALID");
      t.same(body.error.details.keys, [], "no key to name");
    }
  });

  t.test(
    "return_url: an absolute https URL is accepted and handed to the partner as the return_url claim",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const returnUrl = "https://hr.customer.example.com/dashboard?tab=benefits";
      const decision = (await (
        await launch(server, tenant, { partner_key: partner.partnerKey, return_url: returnUrl })
      ).json()) as Decision;
      t.equal(decodeJwt(assertionOf(decision)).return_url, returnUrl);
      const without = (await (await launch(server, tenant, { partner_key: partner.partnerKey })).json()) as Decision;
      t.notOk("return_url" in decodeJwt(assertionOf(without)), "absent when not given");
    },
  );

  for (const [what, returnUrl] of [
    ["a relative URL", "/dashboard"],
    ["an http URL", "http://hr.customer.example.com/"],
    ["a javascript: URL", "javascript:alert(1)"],
    ["a URL with a password", "https://user:secret@hr.customer.example.com/"],
  ]) {
    t.test(`return_url that is ${what} is 422 value_error at body.return_url`, async (t) => {
      const tenant = await createTestTenant(server.services);
      const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const res = await launch(server, tenant, { partner_key: partner.partnerKey, return_url: returnUrl });
      t.equal(res.status, 422);
      const body = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
      t.same(
        body.detail.map((issue) => [issue.loc, issue.type]),
        [[["body", "return_url"], "value_error"]],
      );
    });
  }

  t.test("a body without partner_key is a 422 validation list", async (t) => {
    const tenant = await createTestTenant(server.services);
    const res = await launch(server, tenant, { context_values: {} });
    t.equal(res.status, 422);
    const body = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    t.same(
      body.detail.map((issue) => [issue.loc, issue.type]),
      [[["body", "partner_key"], "missing"]],
    );
  });

  t.test("launch and switch need a bearer token (401) with client_admin or platform_admin (403)", async (t) => {
    for (const path of ["/v1/launch", "/v1/partner-switch"]) {
      t.equal(
        (await server.request(path, { method: "POST", json: { partner_key: "x", target_partner_key: "x" } })).status,
        401,
        path,
      );
      const viewer = await createTestTenant(server.services, ["viewer"]);
      const res = await post(server, viewer, path, { partner_key: "x", target_partner_key: "x" });
      t.equal(res.status, 403, path);
      t.equal((await res.json()).error.code, "FORBIDDEN");
    }
    const admin = await createTestTenant(server.services, ["platform_admin"]);
    const partner = await createTestPartner(server.services, { entitle: [admin.tenantId] });
    t.equal(
      ((await (await launch(server, admin, { partner_key: partner.partnerKey })).json()) as Decision).decision_result,
      "routed",
      "platform_admin may launch",
    );
  });

  t.test("every decision, routed or denied, is recorded with the audit action partner.launch", async (t) => {
    const tenant = await createTestTenant(server.services);
    const entitled = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const other = await createTestPartner(server.services);
    const routed = (await (
      await launch(server, tenant, { partner_key: entitled.partnerKey }, { "X-Request-Id": "req-launch-1" })
    ).json()) as Decision;
    const denied = (await (await launch(server, tenant, { partner_key: other.partnerKey })).json()) as Decision;
    const audit = await listAudit(server.services.db, tenant.tenantId, "partner.launch");
    t.equal(audit.length, 2);
    t.match(audit[0], {
      action: "partner.launch",
      actor: tenant.subject,
      resource_type: "routing_decision",
      resource_id: routed.decision_id,
      request_id: "req-launch-1",
    });
    t.match(audit[0]?.details, {
      partner_key: entitled.partnerKey,
      decision_result: "routed",
      reason: null,
      correlation_id: routed.correlation_id,
    });
    t.match(audit[1]?.details, { partner_key: other.partnerKey, decision_result: "denied", reason: "NOT_ENTITLED" });
    const rows = await server.services
      .db("integrator.routing_decisions")
      .where({ tenant_id: tenant.tenantId })
      .orderBy("created_at")
      .select("id", "kind", "result", "reason", "correlation_id", "created_by");
    t.match(rows, [
      {
        id: routed.decision_id,
        kind: "launch",
        result: "routed",
        reason: null,
        correlation_id: routed.correlation_id,
        created_by: tenant.subject,
      },
      { id: denied.decision_id, kind: "launch", result: "denied", reason: "NOT_ENTITLED" },
    ]);
  });

  t.test("nothing unexpected was logged", async (t) => {
    t.same(server.errors, []);
  });
});

t.test("partner switch", async (t) => {
  const server = await startTestServer(t);

  t.test(
    "a switch to an entitled, active partner is 200 routed with a verifiable assertion for that partner",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const res = await switchTo(
        server,
        tenant,
        { target_partner_key: target.partnerKey, context_values: { plan: "gold" } },
        { "X-Correlation-Id": "switch-1" },
      );
      t.equal(res.status, 200);
      t.equal(res.headers.get("x-correlation-id"), "switch-1");
      t.equal(res.headers.get("idempotent-replayed"), null);
      const decision = (await res.json()) as Decision;
      t.equal(decision.decision_result, "routed");
      t.equal(decision.partner_key, target.partnerKey);
      const jwks = createRemoteJWKSet(new URL(`${server.baseUrl}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(assertionOf(decision), jwks, { audience: target.partnerKey });
      t.same(payload.ctx, { plan: "gold" });
    },
  );

  t.test("switch denies like launch: NOT_ENTITLED and PARTNER_PAUSED", async (t) => {
    const tenant = await createTestTenant(server.services);
    const notEntitled = await createTestPartner(server.services);
    const paused = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    await changePartnerStatus(server.services, paused.partnerKey, "paused");
    t.match(await (await switchTo(server, tenant, { target_partner_key: notEntitled.partnerKey })).json(), {
      decision_result: "denied",
      reason: "NOT_ENTITLED",
    });
    t.match(await (await switchTo(server, tenant, { target_partner_key: paused.partnerKey })).json(), {
      decision_result: "denied",
      reason: "PARTNER_PAUSED",
    });
  });

  t.test("switch to an unknown partner key is denied NOT_ENTITLED like an unentitled partner", async (t) => {
    const tenant = await createTestTenant(server.services);
    const existing = await createTestPartner(server.services);
    const unknown = await switchTo(server, tenant, { target_partner_key: "no-such-partner" });
    const unentitled = await switchTo(server, tenant, { target_partner_key: existing.partnerKey });
    t.equal(unknown.status, 200);
    t.equal(unentitled.status, 200);
    t.match(await unknown.json(), { decision_result: "denied", reason: "NOT_ENTITLED" });
    t.match(await unentitled.json(), { decision_result: "denied", reason: "NOT_ENTITLED" });
  });

  t.test(
    "switch context values follow the launch rules: undocumented keys and non-scalar values are CONTEXT_INVALID",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const target = await createTestPartner(server.services, { contextKeys: ["plan"], entitle: [tenant.tenantId] });
      const unknownKey = await switchTo(server, tenant, {
        target_partner_key: target.partnerKey,
        context_values: { plan: "gold", region: "eu" },
      });
      t.equal(unknownKey.status, 422);
      t.same((await unknownKey.json()).error.details.keys, ["region"]);
      const float = await switchTo(server, tenant, {
        target_partner_key: target.partnerKey,
        context_values: { plan: 2.5 },
      });
      t.equal(float.status, 422);
      const body = await float.json();
      t.equal(body.error.code, "CONTEXT_INVALID");
      t.same(body.error.details.keys, ["plan"]);
    },
  );

  t.test("a switch without X-Correlation-Id gets a generated one", async (t) => {
    const tenant = await createTestTenant(server.services);
    const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const res = await switchTo(server, tenant, { target_partner_key: target.partnerKey });
    t.match(res.headers.get("x-correlation-id"), UUID);
    t.equal(((await res.json()) as Decision).correlation_id, res.headers.get("x-correlation-id"));
  });

  t.test("every switch decision is recorded with the audit action partner.switch", async (t) => {
    const tenant = await createTestTenant(server.services);
    const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const decision = (await (
      await switchTo(server, tenant, { target_partner_key: target.partnerKey })
    ).json()) as Decision;
    const audit = await listAudit(server.services.db, tenant.tenantId);
    t.same(
      audit.map((entry) => entry.action),
      ["partner.switch"],
    );
    t.equal(audit[0]?.resource_id, decision.decision_id);
    t.match(audit[0]?.details, { partner_key: target.partnerKey, decision_result: "routed" });
  });

  t.test(
    "Idempotency-Key: the same key and body replays the stored 200 with Idempotent-Replayed: true; nothing new is recorded",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const body = { target_partner_key: target.partnerKey, context_values: { plan: "gold", employee_id: "E-1" } };
      const first = await switchTo(server, tenant, body, {
        "Idempotency-Key": "switch-key-1",
        "X-Correlation-Id": "corr-first",
      });
      t.equal(first.status, 200);
      const original = (await first.json()) as Decision;
      // Key order does not matter; a new correlation id does not make it a new request.
      const again = await switchTo(
        server,
        tenant,
        { context_values: { employee_id: "E-1", plan: "gold" }, target_partner_key: target.partnerKey },
        { "Idempotency-Key": "switch-key-1", "X-Correlation-Id": "corr-retry" },
      );
      t.equal(again.status, 200);
      t.equal(again.headers.get("idempotent-replayed"), "true");
      t.same(await again.json(), original);
      t.equal(again.headers.get("x-correlation-id"), "corr-first", "the stored decision's correlation id");
      t.equal(await decisionCount(server, tenant.tenantId), 1);
      t.equal((await listAudit(server.services.db, tenant.tenantId, "partner.switch")).length, 1);
    },
  );

  t.test("Idempotency-Key: the same key with a different body is 409 IDEMPOTENCY_KEY_MISMATCH", async (t) => {
    const tenant = await createTestTenant(server.services);
    const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    t.equal(
      (await switchTo(server, tenant, { target_partner_key: target.partnerKey }, { "Idempotency-Key": "switch-key-2" }))
        .status,
      200,
    );
    const res = await switchTo(
      server,
      tenant,
      { target_partner_key: target.partnerKey, context_values: { plan: "gold" } },
      { "Idempotency-Key": "switch-key-2" },
    );
    t.equal(res.status, 409);
    t.equal((await res.json()).error.code, "IDEMPOTENCY_KEY_MISMATCH");
    t.equal(await decisionCount(server, tenant.tenantId), 1);
  });

  t.test("Idempotency-Key: a call while the key is held is 409 IDEMPOTENCY_IN_PROGRESS with Retry-After", async (t) => {
    const tenant = await createTestTenant(server.services);
    const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const holder = new pg.Client({ connectionString: server.databaseUrl });
    await holder.connect();
    t.teardown(() => holder.end());
    await holder.query("begin");
    await holder.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [
      idempotencyLockKey({
        tenantId: tenant.tenantId,
        subject: tenant.subject,
        route: SWITCH_ROUTE,
        key: "switch-key-3",
      }),
    ]);
    const res = await switchTo(
      server,
      tenant,
      { target_partner_key: target.partnerKey },
      { "Idempotency-Key": "switch-key-3" },
    );
    t.equal(res.status, 409);
    t.equal(res.headers.get("retry-after"), "1");
    t.equal((await res.json()).error.code, "IDEMPOTENCY_IN_PROGRESS");
    await holder.query("rollback");
    t.equal(
      (await switchTo(server, tenant, { target_partner_key: target.partnerKey }, { "Idempotency-Key": "switch-key-3" }))
        .status,
      200,
      "the retry succeeds",
    );
  });

  t.test(
    "Idempotency-Key: 12 concurrent identical switches record one decision and one audit action; every 200 is the same bytes",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const responses = await Promise.all(
        Array.from({ length: 12 }, () =>
          switchTo(
            server,
            tenant,
            { target_partner_key: target.partnerKey },
            { "Idempotency-Key": "switch-concurrent" },
          ),
        ),
      );
      const texts = await Promise.all(responses.map((res) => res.text()));
      t.ok(
        responses.every((res) => res.status === 200 || res.status === 409),
        responses.map((res) => res.status).join(","),
      );
      const first = responses.filter((res) => res.status === 200 && res.headers.get("idempotent-replayed") === null);
      const replays = responses.filter(
        (res) => res.status === 200 && res.headers.get("idempotent-replayed") === "true",
      );
      const inProgress = texts.filter(
        (text, i) => responses[i]?.status === 409 && text.includes('"IDEMPOTENCY_IN_PROGRESS"'),
      );
      t.equal(first.length, 1, "one call made the decision");
      t.equal(first.length + replays.length + inProgress.length, 12, "every other answer is a replay or IN_PROGRESS");
      const answered = texts.filter((_, i) => responses[i]?.status === 200);
      t.equal(new Set(answered).size, 1, "every 200 is the same text");
      t.equal(
        new Set(answered.map((text) => (JSON.parse(text) as { decision_id: string }).decision_id)).size,
        1,
        "one decision id",
      );
      t.equal(await decisionCount(server, tenant.tenantId), 1, "one decision");
      t.equal((await listAudit(server.services.db, tenant.tenantId, "partner.switch")).length, 1, "one audit action");
    },
  );

  t.test("Idempotency-Key: an empty key or one over 128 characters is 422 IDEMPOTENCY_KEY_INVALID", async (t) => {
    const tenant = await createTestTenant(server.services);
    const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    for (const key of ["", "k".repeat(129)]) {
      const res = await switchTo(server, tenant, { target_partner_key: target.partnerKey }, { "Idempotency-Key": key });
      t.equal(res.status, 422, `a key of ${key.length}`);
      t.equal((await res.json()).error.code, "IDEMPOTENCY_KEY_INVALID");
    }
    t.equal(
      (
        await switchTo(
          server,
          tenant,
          { target_partner_key: target.partnerKey },
          { "Idempotency-Key": "k".repeat(128) },
        )
      ).status,
      200,
    );
  });

  t.test("Idempotency-Key: without the header every switch is a new decision", async (t) => {
    const tenant = await createTestTenant(server.services);
    const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const a = (await (await switchTo(server, tenant, { target_partner_key: target.partnerKey })).json()) as Decision;
    const b = (await (await switchTo(server, tenant, { target_partner_key: target.partnerKey })).json()) as Decision;
    t.not(a.decision_id, b.decision_id);
    t.equal(await decisionCount(server, tenant.tenantId), 2);
  });

  t.test(
    "Idempotency-Key: switch keys are their own scope; the same key on intake and on switch never meet",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const intake = await post(
        server,
        tenant,
        "/v1/intake/submit",
        { filename: "a.pdf", file_size: 10, mime_type: "application/pdf" },
        { "Idempotency-Key": "shared-key" },
      );
      t.equal(intake.status, 201);
      const switched = await switchTo(
        server,
        tenant,
        { target_partner_key: target.partnerKey },
        { "Idempotency-Key": "shared-key" },
      );
      t.equal(switched.status, 200, "no mismatch with the intake call's body");
      t.equal(switched.headers.get("idempotent-replayed"), null, "not the intake call's response");
      const intakeAgain = await post(
        server,
        tenant,
        "/v1/intake/submit",
        { filename: "a.pdf", file_size: 10, mime_type: "application/pdf" },
        { "Idempotency-Key": "shared-key" },
      );
      t.equal(intakeAgain.headers.get("idempotent-replayed"), "true", "the intake key still replays its own response");
      const routes = await server.services
        .db("integrator.idempotency_keys")
        .where({ tenant_id: tenant.tenantId, idempotency_key: "shared-key" })
        .orderBy("route")
        .pluck("route");
      t.same(routes, ["intake.submit", SWITCH_ROUTE]);
    },
  );

  t.test("Idempotency-Key: keys are scoped to the calling user and tenant", async (t) => {
    const tenant = await createTestTenant(server.services);
    const target = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const colleague = {
      ...tenant,
      subject: "colleague",
      token: (
        await server.services.tokens.issue({ subject: "colleague", tenantId: tenant.tenantId, roles: ["client_admin"] })
      ).token,
    };
    const first = (await (
      await switchTo(server, tenant, { target_partner_key: target.partnerKey }, { "Idempotency-Key": "user-key" })
    ).json()) as Decision;
    const theirs = await switchTo(
      server,
      colleague,
      { target_partner_key: target.partnerKey },
      { "Idempotency-Key": "user-key" },
    );
    t.equal(theirs.headers.get("idempotent-replayed"), null);
    t.not(((await theirs.json()) as Decision).decision_id, first.decision_id);
    const otherTenant = await createTestTenant(server.services);
    await entitlePartner(server.services, otherTenant.tenantId, target.partnerKey);
    const other = await switchTo(
      server,
      otherTenant,
      { target_partner_key: target.partnerKey },
      { "Idempotency-Key": "user-key" },
    );
    t.equal(other.headers.get("idempotent-replayed"), null);
  });

  t.test("Idempotency-Key: a 422 is not remembered; the corrected request with the same key succeeds", async (t) => {
    const tenant = await createTestTenant(server.services);
    const target = await createTestPartner(server.services, { contextKeys: ["plan"], entitle: [tenant.tenantId] });
    t.equal(
      (
        await switchTo(
          server,
          tenant,
          { target_partner_key: target.partnerKey, context_values: { region: "eu" } },
          { "Idempotency-Key": "fix-me" },
        )
      ).status,
      422,
    );
    const good = await switchTo(
      server,
      tenant,
      { target_partner_key: target.partnerKey },
      { "Idempotency-Key": "fix-me" },
    );
    t.equal(good.status, 200);
    t.equal(good.headers.get("idempotent-replayed"), null);
  });

  t.test("nothing unexpected was logged", async (t) => {
    t.same(server.errors, []);
  });
});
