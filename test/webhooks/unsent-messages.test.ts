// A delivery that ends without a further attempt says why in its error_message, and whether it was ever
// sent: "the delivery was not sent" when it never was, "was not sent again" after failed attempts. Black-box
// through HTTP with a real worker and an HTTPS receiver that answers 500; a failed attempt's retry waits an
// hour, so nothing but the test's own acts moves the delivery on.
import t from "tap";
import type { Test } from "tap";
import { startWebhookRig, testCa, jobsOfDelivery, type WebhookRig } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import { DEACTIVATED, MANUALLY_DISABLED, type DeliveryView } from "../../db/webhooks/views.ts";

const ca = testCa(t);
let rig: WebhookRig;

t.before(async () => {
  rig = await startWebhookRig(t, ca, {
    env: { MAX_DELIVERY_ATTEMPTS: "3", WEBHOOK_RETRY_SCHEDULE: "1h" },
    answer: () => ({ status: 500 }),
  });
});

/** A subscription whose first delivery has had one failed attempt and waits for its retry. */
async function failedOnce(t: Test): Promise<{ subscriptionId: string; path: string; delivery: DeliveryView }> {
  const path = `/down-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await rig.emitIntake();
  const delivery = await waitFor(
    async () => (await rig.deliveries()).find((candidate) => candidate.subscription_id === id),
    (candidate) => candidate?.attempts === 1,
    { seconds: 60 },
  );
  if (!delivery) throw new Error("the delivery was not attempted");
  t.equal(delivery.status, "pending", "it waits for its retry");
  return { subscriptionId: id, path, delivery };
}

const deliveryOf = async (id: string) => (await rig.deliveries()).find((delivery) => delivery.id === id);

t.test("a deleted subscription's delivery that failed once says it was not sent again", async (t) => {
  const { subscriptionId, delivery } = await failedOnce(t);
  const res = await rig.server.request(`/v1/webhooks/subscriptions/${subscriptionId}`, {
    method: "DELETE",
    token: rig.tenant.token,
  });
  t.equal(res.status, 204);
  t.match(await deliveryOf(delivery.id), {
    status: "failed",
    attempts: 1,
    error_message: "Subscription deactivated; the delivery was not sent again",
  });
  t.equal(DEACTIVATED.notSentAgain, "Subscription deactivated; the delivery was not sent again");
});

t.test("a retry that finds its subscription disabled by hand says it was not sent again", async (t) => {
  const { subscriptionId, path, delivery } = await failedOnce(t);
  const res = await rig.server.request(`/v1/webhooks/subscriptions/${subscriptionId}/disable`, {
    method: "POST",
    token: rig.tenant.token,
  });
  t.equal(res.status, 200);
  // The hour passes: the retry's job is due now (graphile-worker's documented reschedule_jobs).
  // The first attempt's job may still be completing: wait until the retry's is the only one left.
  const jobs = await waitFor(
    () => jobsOfDelivery(rig.server.services.db, delivery.id),
    (found) => found.length === 1 && found[0]?.locked_at === null,
    { seconds: 30 },
  );
  t.equal(jobs.length, 1, "the retry's job waits");
  await rig.server.services.db.raw("select graphile_worker.reschedule_jobs(?::bigint[], run_at := now())", [
    jobs.map((job) => job.id),
  ]);
  const final = await waitFor(
    () => deliveryOf(delivery.id),
    (candidate) => candidate?.status !== "pending",
    { seconds: 60 },
  );
  t.match(final, { status: "failed", attempts: 1, error_message: MANUALLY_DISABLED.notSentAgain });
  t.equal(MANUALLY_DISABLED.notSentAgain, "Subscription disabled by hand; the delivery was not sent again");
  t.equal(rig.receiver.receivedAt(path).length, 1, "the endpoint got the first attempt only");
});
