// End to end: a tenant subscribes, submits intake, receives a correctly signed POST, and reads every
// attempt through the API; replays emit nothing; document moves emit document events.
import { createHmac } from "node:crypto";
import t from "tap";
import { processRegistry } from "../../foundation/metrics.ts";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import { runAdminCommand } from "../helpers/admin-cli.ts";
import { webhookSchemaErrors } from "../helpers/webhook-schemas.ts";

const pdf = {
  filename: "secret-merger-plan.pdf",
  file_size: 48213,
  mime_type: "application/pdf",
  item_metadata: { client: "Confidential Corp" },
};

t.test("intake events reach a subscriber, signed, once per non-replayed submission", async (t) => {
  const ca = testCa(t);
  const rig = await startWebhookRig(t, ca);
  const { server, receiver, tenant } = rig;
  const subscription = await rig.subscribe(receiver.url("/intake"), [
    "intake.submitted",
    "intake.batch_submitted",
    "document.status_changed",
    "document.uploaded",
    "document.completed",
  ]);

  const submit = (path: string, json: unknown, key: string) =>
    server.request(path, { method: "POST", token: tenant.token, json, headers: { "Idempotency-Key": key } });
  const first = await submit("/v1/intake/submit", { ...pdf, external_reference: "order-1", module: "claims" }, "once");
  t.equal(first.status, 201);
  const submission = await first.json();
  const replay = await submit("/v1/intake/submit", { ...pdf, external_reference: "order-1", module: "claims" }, "once");
  t.equal(replay.headers.get("idempotent-replayed"), "true");
  const batch = await (
    await submit("/v1/intake/batch", { items: [pdf, { ...pdf, mime_type: "application/zip" }] }, "batch-1")
  ).json();

  const received = await waitFor(
    async () => receiver.receivedAt("/intake"),
    (list) => list.length >= 2,
    { seconds: 20 },
  );
  t.equal(received.length, 2, "one delivery per non-replayed submission");
  const bodies = received.map((request) => JSON.parse(request.rawBody.toString("utf8")));
  const single = bodies.find((body) => body.event === "intake.submitted");
  const batched = bodies.find((body) => body.event === "intake.batch_submitted");
  t.same(single?.data, {
    submission_id: submission.id,
    external_reference: "order-1",
    module: "claims",
    tier: null,
    status: "received",
    item_count: 1,
    accepted_count: 1,
    failed_count: 0,
  });
  t.match(batched?.data, { submission_id: batch.id, item_count: 2, accepted_count: 1, failed_count: 1 });
  for (const request of received) {
    const expected = createHmac("sha256", subscription.secret).update(request.rawBody).digest("hex");
    t.equal(request.headers["x-service-review-signature"], expected, "the signature verifies over the raw body");
    const text = request.rawBody.toString("utf8");
    t.notMatch(
      text,
      /secret-merger-plan|Confidential Corp|item_metadata|filename/,
      "no document content in the payload",
    );
    const body = JSON.parse(text);
    t.same(webhookSchemaErrors(body.event, body), [], `${body.event} matches the document's webhooks schema`);
    t.equal(body.tenant_id, tenant.tenantId);
  }

  const delivered = await waitFor(
    rig.deliveries,
    (list) => list.filter((delivery) => delivery.status === "delivered").length >= 2,
    { seconds: 20 },
  );
  t.equal(delivered.length, 2, "the API lists both deliveries");
  for (const delivery of delivered)
    t.match(delivery, { status: "delivered", attempts: 1, response_code: 204, subscription_id: subscription.id });
  const metrics = await processRegistry.getSingleMetricAsString("integrator_webhook_delivery_outcomes_total");
  t.match(
    metrics,
    /integrator_webhook_delivery_outcomes_total\{outcome="delivered"\} [2-9]/,
    "the worker counts delivery outcomes for /metrics",
  );

  // An operator links the accepted item of the single submission to its document.
  const detail = await (
    await server.request(`/v1/intake/submissions/${submission.id}`, { token: tenant.token })
  ).json();
  const documentId = "0190cccc-0000-7000-8000-000000000001";
  await runAdminCommand(server.services, "item:link", {
    tenant: tenant.tenantId,
    item: detail.items[0].id,
    "document-id": documentId,
  });
  const documentEvents = await waitFor(
    async () => receiver.receivedAt("/intake").slice(2),
    (list) => list.length >= 2,
    { seconds: 20 },
  );
  const kinds = documentEvents
    .map((request) => JSON.parse(request.rawBody.toString("utf8")))
    .map((body) => `${body.event}:${body.data.status}:${body.data.previous_status}`)
    .sort();
  t.same(kinds, ["document.status_changed:uploaded:pending", "document.uploaded:uploaded:pending"]);
});

t.test("a submission whose events cannot be stored is rolled back whole", async (t) => {
  const ca = testCa(t);
  const rig = await startWebhookRig(t, ca, { worker: false });
  await rig.subscribe(rig.receiver.url("/x"), ["intake.submitted"]);
  // Break the event function for this database only: the intake transaction must fail as a whole.
  await rig.server.services.db.raw(
    "alter function integrator.emit_event(uuid, text, jsonb) rename to emit_event_moved",
  );
  t.teardown(() =>
    rig.server.services.db
      .raw("alter function integrator.emit_event_moved(uuid, text, jsonb) rename to emit_event")
      .catch(() => undefined),
  );
  const res = await rig.server.request("/v1/intake/submit", {
    method: "POST",
    token: rig.tenant.token,
    json: pdf,
    headers: { "Idempotency-Key": "atomic" },
  });
  t.equal(res.status, 500);
  const left = await rig.server.services.db.raw<{ rows: { submissions: number; audits: number; keys: number }[] }>(
    `select (select count(*) from integrator.intake_submissions where tenant_id = ?)::int as submissions,
            (select count(*) from integrator.audit_actions where tenant_id = ? and action like 'intake.%')::int as audits,
            (select count(*) from integrator.idempotency_keys where tenant_id = ?)::int as keys`,
    [rig.tenant.tenantId, rig.tenant.tenantId, rig.tenant.tenantId],
  );
  t.same(
    left.rows[0],
    { submissions: 0, audits: 0, keys: 0 },
    "no submission, audit action or remembered key survives",
  );
  rig.server.errors.length = 0;
});
