// The operational events through HTTP, with a real worker and HTTPS receivers on loopback (failing ones
// answer 503): webhook.delivery_exhausted when a delivery fails its last attempt, webhook.endpoint_disabled
// when endpoint health disables a subscription, each emitted in the transaction of that change (once, its
// timestamp the change's), delivered to the tenant's other subscriptions naming the kind, never to the
// endpoint it is about, never through `*`, never for a test delivery, and never setting off another: an
// operational event's failed delivery neither disables its endpoint nor reports itself.
import t from "tap";
import type { Knex } from "knex";
import type { ReceivedRequest } from "../helpers/https-receiver.ts";
import { createTestTenant, type TestTenant } from "../helpers/server.ts";
import { intakeEventData, startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import { emitEvent } from "../../db/events.ts";
import { recordAttempt, type AttemptRecord } from "../../db/webhooks/sending.ts";
import type { DeliveryView, EventView, SubscriptionView } from "../../db/webhooks/views.ts";

const ca = testCa(t);
/** Paths whose endpoint answers 503, after `SLOW_MS` (several attempts to one endpoint are then under way at once). */
const down = new Set<string>();
const SLOW_MS = 150;
const OPERATIONAL = ["webhook.endpoint_disabled", "webhook.delivery_exhausted"];
let rig: WebhookRig;

t.before(async () => {
  rig = await startWebhookRig(t, ca, {
    // Two attempts a delivery (retried at once), disabled after two failed deliveries in a row.
    env: { MAX_DELIVERY_ATTEMPTS: "2", WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES: "2", WORKER_CONCURRENCY: "6" },
    answer: (request: ReceivedRequest) =>
      down.has(request.path) ? { status: 503, delayMs: SLOW_MS } : { status: 204 },
  });
});

interface Envelope {
  id: string;
  event: string;
  tenant_id: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** A new tenant of the rig's service. */
const tenant = (): Promise<TestTenant> => createTestTenant(rig.server.services);

/** Subscribes a receiver path of the tenant's to `events` through the API; `failing` makes it answer 503. */
async function endpoint(who: TestTenant, events: string[], failing = false): Promise<{ id: string; path: string }> {
  const path = `/${failing ? "down" : "up"}-${crypto.randomUUID()}`;
  if (failing) down.add(path);
  const res = await rig.server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: who.token,
    json: { url: rig.receiver.url(path), events },
  });
  if (res.status !== 201) throw new Error(`subscribe answered ${res.status}: ${await res.text()}`);
  return { id: ((await res.json()) as { id: string }).id, path };
}

async function get<T>(who: TestTenant, path: string): Promise<T> {
  const res = await rig.server.request(path, { token: who.token });
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

const subscription = (who: TestTenant, id: string) => get<SubscriptionView>(who, `/v1/webhooks/subscriptions/${id}`);

async function deliveriesOf(who: TestTenant): Promise<DeliveryView[]> {
  return (await get<{ deliveries: DeliveryView[] }>(who, "/v1/webhooks/deliveries?limit=200")).deliveries;
}

/** The envelopes a receiver path got, in order. */
const bodies = (path: string): Envelope[] =>
  rig.receiver.receivedAt(path).map((request) => JSON.parse(request.rawBody.toString("utf8")) as Envelope);

/** Waits until the tenant's deliveries are all final and no delivery job is left. */
async function settled(who: TestTenant): Promise<DeliveryView[]> {
  await rig.jobsDrained(60);
  return waitFor(
    () => deliveriesOf(who),
    (deliveries) => deliveries.every((delivery) => delivery.status !== "pending"),
    { seconds: 60 },
  );
}

t.test(
  "a delivery failing its last attempt is reported once to the tenant's other subscriptions naming the kind",
  async (t) => {
    const who = await tenant();
    const failing = await endpoint(who, ["intake.submitted", ...OPERATIONAL], true);
    const watcher = await endpoint(who, OPERATIONAL);
    const wildcard = await endpoint(who, ["*"]);
    const stranger = await tenant();
    const strangerWatcher = await endpoint(stranger, OPERATIONAL);

    await emitEvent(rig.server.services.db, who.tenantId, "intake.submitted", intakeEventData());
    const deliveries = await settled(who);
    const exhausted = deliveries.find((delivery) => delivery.subscription_id === failing.id);
    t.match(exhausted, { status: "failed", attempts: 2, response_code: 503 }, "the delivery used its two attempts");
    t.equal(rig.receiver.receivedAt(failing.path).length, 2);

    const reports = bodies(watcher.path);
    t.equal(reports.length, 1, "one report");
    t.same(reports[0]?.data, {
      delivery_id: exhausted?.id,
      subscription_id: failing.id,
      event_id: exhausted?.event_id,
      event_type: "intake.submitted",
      attempts: 2,
      last_response_code: 503,
    });
    t.match(reports[0], { event: "webhook.delivery_exhausted", tenant_id: who.tenantId });
    t.equal(rig.receiver.receivedAt(watcher.path)[0]?.headers["x-service-review-event"], "webhook.delivery_exhausted");
    t.same(
      bodies(failing.path).map((body) => body.event),
      ["intake.submitted", "intake.submitted"],
      "never to the endpoint it is about, though it names the kind",
    );
    t.same(
      bodies(wildcard.path).map((body) => body.event),
      ["intake.submitted"],
      "* takes the lifecycle event, not the report",
    );
    t.same(bodies(strangerWatcher.path), [], "nor to another tenant");
    t.equal((await subscription(who, failing.id)).status, "active", "one failed delivery does not disable it");

    const listed = await get<{ events: EventView[] }>(who, "/v1/events?type=webhook.delivery_exhausted");
    t.same(
      listed.events.map((event) => event.id),
      [reports[0]?.id],
      "the event is listed with the tenant's events",
    );
  },
);

t.test(
  "endpoint health disabling a subscription emits webhook.endpoint_disabled in the same transaction, once",
  async (t) => {
    const who = await tenant();
    const failing = await endpoint(who, ["intake.submitted"], true);
    const watcher = await endpoint(who, ["webhook.endpoint_disabled"]);
    for (let event = 0; event < 2; event++) {
      await emitEvent(rig.server.services.db, who.tenantId, "intake.submitted", intakeEventData());
      await settled(who);
    }
    const disabled = await subscription(who, failing.id);
    t.match(disabled, { status: "disabled", disabled_reason: "2 deliveries in a row failed" });
    t.match(disabled.health, { status: "failing", attempts: 4, delivered: 0, last_response_code: 503 });

    const reports = bodies(watcher.path);
    t.equal(reports.length, 1, "one report, and none of the exhausted deliveries (not named)");
    t.match(reports[0], {
      event: "webhook.endpoint_disabled",
      data: { subscription_id: failing.id, reason: "2 deliveries in a row failed" },
    });
    t.equal(reports[0]?.timestamp, disabled.disabled_at, "its time is the disabling's: one transaction");

    // A third event meets the disabled endpoint: failed without an attempt, and no report of either kind.
    await emitEvent(rig.server.services.db, who.tenantId, "intake.submitted", intakeEventData());
    await settled(who);
    t.equal(rig.receiver.receivedAt(failing.path).length, 4, "nothing more was sent to it");
    t.equal(bodies(watcher.path).length, 1, "disabled once, reported once");
  },
);

t.test(
  "one report never sets off another: an operational event's failed deliveries neither disable their endpoint nor report themselves",
  async (t) => {
    const who = await tenant();
    const failing = await endpoint(who, ["intake.submitted"], true);
    const brokenWatcher = await endpoint(who, OPERATIONAL, true);
    const watcher = await endpoint(who, OPERATIONAL);
    for (let event = 0; event < 2; event++) {
      await emitEvent(rig.server.services.db, who.tenantId, "intake.submitted", intakeEventData());
      await settled(who);
    }
    t.equal((await subscription(who, failing.id)).status, "disabled");
    const about = (path: string) => bodies(path).map((body) => [body.event, body.data.subscription_id]);
    const reports = [
      ["webhook.delivery_exhausted", failing.id],
      ["webhook.delivery_exhausted", failing.id],
      ["webhook.endpoint_disabled", failing.id],
    ];
    t.same(
      about(watcher.path).sort(),
      [...reports].sort(),
      "the working watcher: three reports, all about the endpoint",
    );
    const broken = await subscription(who, brokenWatcher.id);
    t.match(
      broken,
      { status: "active", disabled_reason: null },
      "the broken watcher failed three deliveries in a row and is still enabled",
    );
    t.match(broken.health, { status: "failing", attempts: 6, delivered: 0 }, "though its health says how it is");
    const failedReports = (await deliveriesOf(who)).filter((delivery) => delivery.subscription_id === brokenWatcher.id);
    t.same(
      failedReports.map((delivery) => [delivery.status, delivery.attempts]),
      [
        ["failed", 2],
        ["failed", 2],
        ["failed", 2],
      ],
      "its three reports used their attempts",
    );
  },
);

t.test("a test delivery that fails its attempts is not reported", async (t) => {
  const who = await tenant();
  const failing = await endpoint(who, ["intake.submitted"], true);
  const watcher = await endpoint(who, OPERATIONAL);
  const res = await rig.server.request(`/v1/webhooks/subscriptions/${failing.id}/test`, {
    method: "POST",
    token: who.token,
  });
  t.equal(res.status, 202);
  const deliveries = await settled(who);
  t.match(
    deliveries.find((delivery) => delivery.subscription_id === failing.id),
    { status: "failed", attempts: 2, origin: "test" },
  );
  t.same(bodies(watcher.path), [], "nothing reported");
});

t.test(
  "attempts recorded at once for a failing endpoint disable it once: one webhook.endpoint_disabled, and one report per delivery that used its attempts",
  async (t) => {
    const who = await tenant();
    const failing = await endpoint(who, ["intake.submitted"], true);
    const watcher = await endpoint(who, OPERATIONAL);
    await Promise.all(
      Array.from({ length: 8 }, () =>
        emitEvent(rig.server.services.db, who.tenantId, "intake.submitted", intakeEventData()),
      ),
    );
    const deliveries = await settled(who);
    t.equal((await subscription(who, failing.id)).status, "disabled");
    const exhausted = deliveries.filter(
      (delivery) => delivery.subscription_id === failing.id && delivery.attempts === 2,
    );
    t.ok(exhausted.length >= 2, `${exhausted.length} deliveries used their attempts before it was disabled`);
    const reports = bodies(watcher.path);
    t.equal(reports.filter((body) => body.event === "webhook.endpoint_disabled").length, 1, "disabled once");
    t.same(
      reports
        .filter((body) => body.event === "webhook.delivery_exhausted")
        .map((body) => body.data.delivery_id)
        .sort(),
      exhausted.map((delivery) => delivery.id).sort(),
      "one report per delivery that used its attempts, none for those failed unsent",
    );
  },
);

t.test(
  "the reports exist exactly with the recorded attempt: a record repeated by another run adds none, a rollback leaves none",
  async (t) => {
    const who = await tenant();
    const failing = await endpoint(who, ["intake.submitted"], true);
    const watcher = await endpoint(who, OPERATIONAL);
    const { db } = rig.server.services;
    const reportsTo = (trx: Knex, subscriptionId: string) =>
      trx("integrator.webhook_deliveries")
        .where({ tenant_id: who.tenantId, subscription_id: subscriptionId })
        .orderBy("event_type")
        .pluck("event_type");
    await db
      .transaction(async (trx) => {
        // The delivery and its job are invisible to the worker until this transaction commits; it never does.
        await emitEvent(trx, who.tenantId, "intake.submitted", intakeEventData());
        const [deliveryId] = await trx("integrator.webhook_deliveries")
          .where({ tenant_id: who.tenantId, subscription_id: failing.id })
          .pluck("id");
        const last: AttemptRecord = {
          tenantId: who.tenantId,
          deliveryId: String(deliveryId),
          attemptsBefore: 0,
          attemptedAt: new Date(),
          durationMs: 12,
          status: "failed",
          responseCode: 503,
          errorMessage: "HTTP status 503",
          errorClass: "http_status",
          failure: "The endpoint answered 503 Service Unavailable.",
          requestHeaders: {},
          response: null,
          health: { disableAfterFailedDeliveries: 1, disableAfterFailingDays: 0 },
        };
        t.equal(await recordAttempt(trx, last), true, "the attempt is recorded");
        t.equal(
          await recordAttempt(trx, last),
          false,
          "the same attempt recorded again by another run changes nothing",
        );
        t.same(
          await reportsTo(trx, watcher.id),
          ["webhook.delivery_exhausted", "webhook.endpoint_disabled"],
          "one report of each kind",
        );
        throw new Error("rolled back");
      })
      .catch((error: unknown) => t.equal((error as Error).message, "rolled back"));
    t.same(await reportsTo(db, watcher.id), [], "rolled back with the attempt: no report");
    t.equal((await subscription(who, failing.id)).status, "active", "nor the disabling");
  },
);

t.test("no API response failed the document's response validation", async (t) => {
  t.same(rig.server.errors, []);
});
