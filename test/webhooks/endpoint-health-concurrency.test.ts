// Endpoint health under concurrent attempts: every failed delivery counts even when the worker records
// several at once for one endpoint, and a delivered attempt to a healthy endpoint does not write its
// subscription at all (no row lock shared by every delivery to one endpoint).
import t from "tap";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);
const EVENTS = 12;

t.test("failed deliveries recorded concurrently for one endpoint each count towards disabling it", async (t) => {
  const rig = await startWebhookRig(t, ca, {
    env: {
      MAX_DELIVERY_ATTEMPTS: "1",
      WORKER_CONCURRENCY: "6",
      WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES: String(EVENTS),
    },
    // Slow failures, so that up to six attempts to the endpoint are under way at once.
    answer: () => ({ status: 500, delayMs: 150 }),
  });
  const { id } = await rig.subscribe(rig.receiver.url("/down"));
  await Promise.all(Array.from({ length: EVENTS }, () => rig.emitIntake()));
  await waitFor(
    () => rig.deliveries(),
    (deliveries) => deliveries.length === EVENTS && deliveries.every((delivery) => delivery.status === "failed"),
    { seconds: 30 },
  );
  t.match(await rig.subscription(id), { status: "disabled", disabled_reason: `${EVENTS} deliveries in a row failed` });
  t.ok(rig.receiver.receivedAt("/down").length >= EVENTS, "every delivery was attempted");
});

t.test("a delivered attempt to a healthy endpoint leaves its subscription row as it was", async (t) => {
  const rig = await startWebhookRig(t, ca, { answer: () => ({ status: 204 }) });
  const { id } = await rig.subscribe(rig.receiver.url("/up"));
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
