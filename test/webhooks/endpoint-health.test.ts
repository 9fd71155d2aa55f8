// Endpoint health with a real worker and HTTPS receiver: a subscription whose
// deliveries keep failing is disabled by itself (N failed deliveries in a row, or every attempt failing
// for D days), shows why and when, is still listed but receives nothing, and the tenant re-enables it.
// Under concurrent attempts every failed delivery counts even when the worker records several at once for
// one endpoint, and a delivered attempt to a healthy endpoint does not write its subscription at all (no
// row lock shared by every delivery to one endpoint).
import t from "tap";
import type { ReceivedRequest } from "../helpers/https-receiver.ts";
import { createTestTenant } from "../helpers/server.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import { DISABLED } from "../../db/webhooks/views.ts";
import { queueManualDelivery } from "../../db/webhooks/deliveries.ts";

const ca = testCa(t);
const FAILED_IN_A_ROW = 2;
/** Paths whose endpoint is down (answers 500). */
const down = new Set<string>();
let rig: WebhookRig;

t.before(async () => {
  rig = await startWebhookRig(t, ca, {
    env: { MAX_DELIVERY_ATTEMPTS: "1", WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES: String(FAILED_IN_A_ROW) },
    answer: (request: ReceivedRequest) => (down.has(request.path) ? { status: 500 } : { status: 204 }),
  });
});

/** Emits one event and waits until every delivery of the subscription is final. */
async function oneEvent(subscriptionId: string): Promise<void> {
  await rig.emitIntake();
  await waitFor(
    async () => (await rig.deliveries()).filter((delivery) => delivery.subscription_id === subscriptionId),
    (deliveries) => deliveries.every((delivery) => delivery.status !== "pending"),
  );
}

t.test(
  "after WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES failed deliveries in a row the subscription is disabled, with reason and time",
  async (t) => {
    const path = `/down-${crypto.randomUUID()}`;
    down.add(path);
    const { id } = await rig.subscribe(rig.receiver.url(path));
    await oneEvent(id);
    t.match(
      await rig.subscription(id),
      { status: "active", disabled_at: null, disabled_reason: null },
      "one failure is not enough",
    );
    const before = Date.now();
    await oneEvent(id);
    const disabled = await rig.subscription(id);
    t.equal(disabled.status, "disabled");
    t.equal(disabled.is_active, true, "disabled is not deleted");
    t.equal(disabled.disabled_reason, `${FAILED_IN_A_ROW} deliveries in a row failed`);
    t.ok(disabled.disabled_at && Date.parse(disabled.disabled_at) >= before - 1000, "disabled_at is set");
    t.match(
      (await rig.subscriptions()).find((subscription) => subscription.id === id),
      { status: "disabled" },
      "still listed, as disabled",
    );
  },
);

t.test("a delivered attempt resets the count of failed deliveries", async (t) => {
  const path = `/flaky-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path));
  down.add(path);
  await oneEvent(id);
  down.delete(path);
  await oneEvent(id);
  down.add(path);
  await oneEvent(id);
  t.equal((await rig.subscription(id)).status, "active", "fail, deliver, fail is not two in a row");
});

t.test(
  "events for a disabled subscription are recorded as failed deliveries, never sent, naming the reason",
  async (t) => {
    const path = `/disabled-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path));
    await rig.server.services
      .db("integrator.webhook_subscriptions")
      .where({ tenant_id: rig.tenant.tenantId, id })
      .update({ disabled_at: new Date(), disabled_reason: "x" });
    await rig.emitIntake();
    const final = await rig.finalDelivery(id);
    t.match(final, { status: "failed", attempts: 0, error_message: DISABLED.notSent });
    t.equal(rig.receiver.receivedAt(path).length, 0, "nothing was sent");
  },
);

t.test(
  "when every attempt has failed for WEBHOOK_DISABLE_AFTER_FAILING_DAYS days the subscription is disabled",
  async (t) => {
    const path = `/long-down-${crypto.randomUUID()}`;
    down.add(path);
    const { id } = await rig.subscribe(rig.receiver.url(path));
    // Failing since six days (the default rule is five): the next failed attempt disables it.
    await rig.server.services
      .db("integrator.webhook_subscriptions")
      .where({ tenant_id: rig.tenant.tenantId, id })
      .update({ failing_since: new Date(Date.now() - 6 * 86_400_000) });
    await oneEvent(id);
    t.match(await rig.subscription(id), { status: "disabled", disabled_reason: "Every attempt failed for 5 days" });
  },
);

t.test("the tenant re-enables a disabled subscription; deliveries resume with a fresh failure history", async (t) => {
  const path = `/recovers-${crypto.randomUUID()}`;
  down.add(path);
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await oneEvent(id);
  await oneEvent(id);
  t.equal((await rig.subscription(id)).status, "disabled");
  down.delete(path);
  const res = await rig.server.request(`/v1/webhooks/subscriptions/${id}/enable`, {
    method: "POST",
    token: rig.tenant.token,
  });
  t.equal(res.status, 200);
  t.match(await res.json(), { id, status: "active", disabled_at: null, disabled_reason: null });
  const sentBefore = rig.receiver.receivedAt(path).length;
  await oneEvent(id);
  t.equal(rig.receiver.receivedAt(path).length, sentBefore + 1, "delivered to again");
  down.add(path);
  await oneEvent(id);
  t.equal((await rig.subscription(id)).status, "active", "one failure after enabling is not two in a row");
});

t.test("enabling an active subscription answers 200 and changes nothing", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/fine-${crypto.randomUUID()}`));
  const res = await rig.server.request(`/v1/webhooks/subscriptions/${id}/enable`, {
    method: "POST",
    token: rig.tenant.token,
  });
  t.equal(res.status, 200);
  t.match(await res.json(), { status: "active" });
});

t.test("enable and get: deleted, unknown, malformed and foreign ids answer 404 alike", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/gone-${crypto.randomUUID()}`));
  const stranger = await createTestTenant(rig.server.services);
  const deleted = (await rig.subscribe(rig.receiver.url(`/deleted-${crypto.randomUUID()}`))).id;
  await rig.server.request(`/v1/webhooks/subscriptions/${deleted}`, { method: "DELETE", token: rig.tenant.token });
  for (const [target, token] of [
    [id, stranger.token],
    [crypto.randomUUID(), rig.tenant.token],
    ["not-a-uuid", rig.tenant.token],
    [deleted, rig.tenant.token],
  ] as const) {
    const enable = await rig.server.request(`/v1/webhooks/subscriptions/${target}/enable`, { method: "POST", token });
    t.equal(enable.status, 404, `enable ${target}`);
    const get = await rig.server.request(`/v1/webhooks/subscriptions/${target}`, { token });
    t.equal(get.status, 404, `get ${target}`);
    t.equal(((await get.json()) as { error: { code: string } }).error.code, "NOT_FOUND");
  }
});

t.test("a pending delivery of a subscription disabled meanwhile ends failed without being sent", async (t) => {
  const path = `/disabled-pending-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await rig.server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: rig.tenant.tenantId, id })
    .update({ disabled_at: new Date(), disabled_reason: "x" });
  // As if it had been queued just before the subscription was disabled.
  const eventUuid = crypto.randomUUID();
  const outcome = await queueManualDelivery(rig.server.services.db, {
    tenantId: rig.tenant.tenantId,
    subscriptionId: id,
    eventType: "webhook.test",
    eventUuid,
    payload: {
      id: `evt_${eventUuid}`,
      event: "webhook.test",
      tenant_id: rig.tenant.tenantId,
      timestamp: new Date().toISOString(),
      data: { subscription_id: id },
    },
    origin: "test",
    redeliveryOf: null,
    perMinute: 1000,
    bucket: null,
  });
  if (!("queued" in outcome)) return t.fail("not queued");
  const final = await rig.finalDelivery(id);
  t.match(final, { id: outcome.queued.id, status: "failed", attempts: 0, error_message: DISABLED.notSent });
  t.equal(rig.receiver.receivedAt(path).length, 0, "nothing was sent");
});

t.test("a delivered attempt to a healthy endpoint leaves its subscription row as it was", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/up-${crypto.randomUUID()}`));
  const version = async () =>
    (
      await rig.server.services.db.raw<{ rows: { version: string }[] }>(
        "select xmin::text as version from integrator.webhook_subscriptions where id = ?",
        [id],
      )
    ).rows[0]?.version;
  const before = await version();
  await rig.emitIntake();
  const delivery = await rig.finalDelivery(id);
  t.equal(delivery?.status, "delivered");
  t.equal(await version(), before, "no new row version of the subscription");
});

t.test("failed deliveries recorded concurrently for one endpoint each count towards disabling it", async (t) => {
  // A rig of its own: up to six slow attempts to one endpoint under way at once, and a threshold that only
  // every one of the concurrent failures together reaches.
  const events = 12;
  const concurrent = await startWebhookRig(t, ca, {
    env: {
      MAX_DELIVERY_ATTEMPTS: "1",
      WORKER_CONCURRENCY: "6",
      WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES: String(events),
    },
    answer: () => ({ status: 500, delayMs: 150 }),
  });
  const { id } = await concurrent.subscribe(concurrent.receiver.url("/down"));
  await Promise.all(Array.from({ length: events }, () => concurrent.emitIntake()));
  await waitFor(
    () => concurrent.deliveries(),
    (deliveries) => deliveries.length === events && deliveries.every((delivery) => delivery.status === "failed"),
    { seconds: 30 },
  );
  t.match(await concurrent.subscription(id), {
    status: "disabled",
    disabled_reason: `${events} deliveries in a row failed`,
  });
  t.ok(concurrent.receiver.receivedAt("/down").length >= events, "every delivery was attempted");
});
