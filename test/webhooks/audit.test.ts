// Every change to a tenant's webhooks is an audit action in the same transaction as the change, with who
// made it (the token's subject; `portal:<subject>` through a portal link) and the ids it touched, read
// back with `npm run admin -- audit:list`. A request that changes nothing (404, 409, 429) records nothing.
import t from "tap";
import { runAdminCommand } from "../helpers/admin-cli.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { listAudit, type AuditRecord } from "../../db/audit.ts";

t.test("webhook changes through HTTP are audited with the actor and the ids", async (t) => {
  const server = await startTestServer(t, { env: { PUBLIC_BASE_URL: "https://integrator.example.com" } });
  const tenant = await createTestTenant(server.services);
  const other = await createTestTenant(server.services);
  const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) =>
    server.request(path, { method: init.method ?? "POST", token: init.token ?? tenant.token, json: init.json });

  const created = await call("/v1/webhooks/subscriptions", {
    json: { url: "https://hooks.example.com/audit", events: ["intake.submitted"] },
  });
  t.equal(created.status, 201);
  const subscription = (await created.json()) as { id: string; secret: string };
  const base = `/v1/webhooks/subscriptions/${subscription.id}`;
  t.equal((await call(`${base}/disable`, { json: { reason: "maintenance" } })).status, 200);
  t.equal((await call(`${base}/enable`)).status, 200);
  t.equal((await call(`${base}/rotate-secret`)).status, 200);
  const test = await call(`${base}/test`);
  t.equal(test.status, 202);
  const testDelivery = (await test.json()) as { id: string };
  const redelivered = await call(`/v1/webhooks/deliveries/${testDelivery.id}/redeliver`);
  t.equal(redelivered.status, 202);
  const redelivery = (await redelivered.json()) as { id: string };
  const link = await call("/v1/webhooks/portal-sessions");
  t.equal(link.status, 201);
  const portalToken = new URL(((await link.json()) as { url: string }).url).hash.replace(/^#token=/, "");

  // Through the portal link: the actor is marked.
  const viaPortal = await call("/v1/webhooks/subscriptions", {
    token: portalToken,
    json: { url: "https://hooks.example.com/portal", events: ["*"] },
  });
  t.equal(viaPortal.status, 201);
  const portalSubscription = (await viaPortal.json()) as { id: string };
  t.equal(
    (await call(`/v1/webhooks/subscriptions/${portalSubscription.id}/disable`, { token: portalToken })).status,
    200,
  );
  t.equal((await call(`${base}`, { method: "DELETE" })).status, 204);

  // Refusals change nothing and record nothing.
  const before = (await listAudit(server.services.db, tenant.tenantId)).length;
  t.equal((await call(`/v1/webhooks/subscriptions/${crypto.randomUUID()}/disable`)).status, 404);
  t.equal(
    (
      await call("/v1/webhooks/subscriptions", {
        json: { url: "https://hooks.example.com/portal", events: ["*"] },
      })
    ).status,
    409,
  );
  t.equal((await call(`${base}/enable`, { token: other.token })).status, 404, "another tenant's id");
  t.equal((await listAudit(server.services.db, tenant.tenantId)).length, before, "no row for a refusal");
  t.same(await listAudit(server.services.db, other.tenantId), [], "nothing in the other tenant's trail");

  // audit:list as the CLI runs it, in this process (the CLI's own output: test/intake/submissions.test.ts).
  const listed = (await runAdminCommand(server.services, "audit:list", { tenant: tenant.tenantId })) as AuditRecord[];
  const trail = listed.map((entry) => ({
    action: entry.action,
    actor: entry.actor,
    resource_type: entry.resource_type,
    resource_id: entry.resource_id,
    details: entry.details,
    request_id: typeof entry.request_id,
  }));
  const portalActor = `portal:${tenant.subject}`;
  t.same(trail, [
    {
      action: "webhooks.subscription_created",
      actor: tenant.subject,
      resource_type: "webhook_subscription",
      resource_id: subscription.id,
      details: { url: "https://hooks.example.com/audit", events: ["intake.submitted"] },
      request_id: "string",
    },
    {
      action: "webhooks.subscription_disabled",
      actor: tenant.subject,
      resource_type: "webhook_subscription",
      resource_id: subscription.id,
      details: { reason: "Disabled by hand: maintenance" },
      request_id: "string",
    },
    {
      action: "webhooks.subscription_enabled",
      actor: tenant.subject,
      resource_type: "webhook_subscription",
      resource_id: subscription.id,
      details: null,
      request_id: "string",
    },
    {
      action: "webhooks.secret_rotated",
      actor: tenant.subject,
      resource_type: "webhook_subscription",
      resource_id: subscription.id,
      details: null,
      request_id: "string",
    },
    {
      action: "webhooks.test_event_sent",
      actor: tenant.subject,
      resource_type: "webhook_delivery",
      resource_id: testDelivery.id,
      details: { subscription_id: subscription.id },
      request_id: "string",
    },
    {
      action: "webhooks.delivery_redelivered",
      actor: tenant.subject,
      resource_type: "webhook_delivery",
      resource_id: redelivery.id,
      details: { subscription_id: subscription.id, redelivery_of: testDelivery.id },
      request_id: "string",
    },
    {
      action: "webhooks.portal_session_created",
      actor: tenant.subject,
      resource_type: "portal_session",
      resource_id: tenant.tenantId,
      details: trail[6]?.details,
      request_id: "string",
    },
    {
      action: "webhooks.subscription_created",
      actor: portalActor,
      resource_type: "webhook_subscription",
      resource_id: portalSubscription.id,
      details: { url: "https://hooks.example.com/portal", events: ["*"] },
      request_id: "string",
    },
    {
      action: "webhooks.subscription_disabled",
      actor: portalActor,
      resource_type: "webhook_subscription",
      resource_id: portalSubscription.id,
      details: { reason: "Disabled by hand" },
      request_id: "string",
    },
    {
      action: "webhooks.subscription_deleted",
      actor: tenant.subject,
      resource_type: "webhook_subscription",
      resource_id: subscription.id,
      details: null,
      request_id: "string",
    },
  ]);

  const deleted = (await runAdminCommand(server.services, "audit:list", {
    tenant: tenant.tenantId,
    action: "webhooks.subscription_deleted",
  })) as AuditRecord[];
  t.same(
    deleted.map((entry) => entry.resource_id),
    [subscription.id],
    "audit:list --action filters",
  );
});

t.test("an audit row is written in the change's transaction: the request id ties it to the answer", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const created = await server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: tenant.token,
    json: { url: "https://hooks.example.com/request-id", events: ["*"] },
    headers: { "X-Request-Id": "req-audit-1" },
  });
  t.equal(created.status, 201);
  const [row] = await listAudit(server.services.db, tenant.tenantId, "webhooks.subscription_created");
  t.equal(row?.request_id, "req-audit-1");
});
