// An endpoint's health (WebhookSubscriptionHealth) through HTTP, with a real worker and an HTTPS receiver on
// loopback: the figure follows the newest attempts, so a receiver answering 503 shows `failing` at once in
// get and list alike, although every delivery before it was delivered and the failing one is still pending
// its retry; only the last 24 hours and the newest 100 attempts count.
import t from "tap";
import type { ReceivedRequest } from "../helpers/https-receiver.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import type { SubscriptionView } from "../../db/webhooks/views.ts";
import { healthQuery } from "../../db/webhooks/health.ts";

const ca = testCa(t);
/** Paths whose endpoint answers 503 Service Unavailable. */
const down = new Set<string>();
let rig: WebhookRig;

t.before(async () => {
  rig = await startWebhookRig(t, ca, {
    // A failed delivery waits an hour for its retry: it stays pending, as after a receiver's first 503.
    env: { MAX_DELIVERY_ATTEMPTS: "3", WEBHOOK_RETRY_SCHEDULE: "1h" },
    answer: (request: ReceivedRequest) => (down.has(request.path) ? { status: 503 } : { status: 204 }),
  });
});

/** Emits one event and waits until the subscription's attempts number `attempts`. */
async function attemptsReach(subscriptionId: string, attempts: number): Promise<SubscriptionView["health"]> {
  await rig.emitIntake();
  return (
    await waitFor(
      () => rig.subscription(subscriptionId),
      (subscription) => subscription.health.attempts >= attempts,
    )
  ).health;
}

/** The subscription's health as listed beside the others. */
async function listedHealth(subscriptionId: string): Promise<SubscriptionView["health"] | undefined> {
  return (await rig.subscriptions()).find((subscription) => subscription.id === subscriptionId)?.health;
}

t.test("a new endpoint's health is unknown, with nothing counted", async (t) => {
  const res = await rig.server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: rig.tenant.token,
    json: { url: rig.receiver.url(`/new-${crypto.randomUUID()}`), events: ["*"] },
  });
  t.equal(res.status, 201);
  const created = (await res.json()) as SubscriptionView;
  const unknown = {
    status: "unknown",
    attempts: 0,
    delivered: 0,
    delivered_percent: null,
    last_attempt_at: null,
    last_outcome: null,
    last_response_code: null,
  };
  t.same(created.health, unknown, "in the creation's answer");
  t.same((await rig.subscription(created.id)).health, unknown, "and when read");
});

t.test(
  "a receiver answering 503 shows failing at once, in get and list alike, though every earlier delivery was delivered",
  async (t) => {
    const path = `/flips-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path));
    for (let sent = 1; sent <= 3; sent++) await attemptsReach(id, sent);
    const before = await rig.subscription(id);
    t.match(
      before.health,
      { status: "healthy", attempts: 3, delivered: 3, delivered_percent: 100, last_outcome: "delivered" },
      "three delivered: healthy",
    );
    t.equal(before.health.last_response_code, 204);

    down.add(path);
    const failing = await attemptsReach(id, 4);
    t.same(
      { ...failing, last_attempt_at: typeof failing.last_attempt_at },
      {
        status: "failing",
        attempts: 4,
        delivered: 3,
        delivered_percent: 75,
        last_attempt_at: "string",
        last_outcome: "failed",
        last_response_code: 503,
      },
      "the newest attempt was answered 503: failing",
    );
    const pending = (await rig.deliveries()).find((delivery) => delivery.subscription_id === id);
    t.match(pending, { status: "pending", attempts: 1, response_code: 503 }, "while its delivery waits for a retry");
    t.same(await listedHealth(id), failing, "the list says the same");
    t.same(rig.receiver.receivedAt(path).length, 4, "every attempt reached the receiver");

    down.delete(path);
    const recovered = await attemptsReach(id, 5);
    t.match(
      recovered,
      { status: "degraded", attempts: 5, delivered: 4, delivered_percent: 80, last_outcome: "delivered" },
      "delivered again, with a failure among the recent attempts: degraded",
    );
  },
);

t.test("only the attempts of the last 24 hours count, at most the newest 100", async (t) => {
  const { db } = rig.server.services;
  const tenantId = rig.tenant.tenantId;
  const path = `/history-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await attemptsReach(id, 1);
  const delivery = (await rig.deliveries()).find((row) => row.subscription_id === id);
  if (!delivery) return t.fail("no delivery");
  // The history of a busy endpoint, written beside the real attempt of the same delivery: 100 attempts delivered
  // in the last hour, 50 failed before them, and 30 failed a day and more ago.
  await db.raw(
    `insert into integrator.webhook_delivery_attempts
            (tenant_id, delivery_id, subscription_id, number, attempted_at, duration_ms, outcome, response_code, error_class)
     select ?, ?, ?, n + 1,
            case when n <= 30 then now() - interval '25 hours' - make_interval(mins => n)
                 else now() - interval '2 hours' + make_interval(secs => n) end,
            12,
            case when n <= 80 then 'failed' else 'delivered' end,
            case when n <= 80 then 503 else 200 end,
            case when n <= 80 then 'http_status' end
       from generate_series(1, 180) as n`,
    [tenantId, delivery.id, id],
  );
  const health = (await rig.subscription(id)).health;
  t.match(
    health,
    { status: "healthy", attempts: 100, delivered: 100, delivered_percent: 100, last_response_code: 204 },
    "the newest 100: the real attempt and 99 delivered ones; the 50 failures before them and the old ones do not count",
  );

  await db("integrator.webhook_delivery_attempts")
    .where({ tenant_id: tenantId, subscription_id: id })
    .where("outcome", "delivered")
    .update({ attempted_at: db.raw("attempted_at - interval '1 day'") });
  const olderSuccesses = (await rig.subscription(id)).health;
  t.match(
    olderSuccesses,
    { status: "failing", attempts: 50, delivered: 0, delivered_percent: 0, last_response_code: 503 },
    "a day later, the deliveries have left the window and the 50 failures remain",
  );

  await db("integrator.webhook_delivery_attempts")
    .where({ tenant_id: tenantId, subscription_id: id })
    .update({ attempted_at: db.raw("attempted_at - interval '1 day'") });
  t.match(
    (await rig.subscription(id)).health,
    { status: "unknown", attempts: 0, last_attempt_at: null },
    "nothing in the last 24 hours: unknown",
  );
});

t.test("the health read is an index range scan per subscription, however many attempts the tenant has", async (t) => {
  const { db } = rig.server.services;
  const tenantId = rig.tenant.tenantId;
  const { id } = await rig.subscribe(rig.receiver.url(`/busy-${crypto.randomUUID()}`));
  await attemptsReach(id, 1);
  const delivery = (await rig.deliveries()).find((row) => row.subscription_id === id);
  if (!delivery) return t.fail("no delivery");
  const others = Array.from({ length: 50 }, () => crypto.randomUUID());
  // 20 000 attempts of 50 other subscriptions over the last two days.
  await db.raw(
    `insert into integrator.webhook_delivery_attempts
            (tenant_id, delivery_id, subscription_id, number, attempted_at, duration_ms, outcome, response_code)
     select ?, ?, (?::uuid[])[1 + n % 50], n + 1, now() - make_interval(secs => n * 8), 10, 'delivered', 204
       from generate_series(1, 20000) as n`,
    [tenantId, delivery.id, others],
  );
  await db.raw("analyze integrator.webhook_delivery_attempts");
  const { sql, bindings } = healthQuery(db, tenantId, [id, ...others.slice(0, 19)]).toSQL();
  const plan = (await db.raw<{ rows: { "QUERY PLAN": string }[] }>(`explain ${sql}`, bindings as never)).rows.map(
    (row) => row["QUERY PLAN"],
  );
  t.match(plan.join("\n"), /Index Scan using webhook_delivery_attempts_by_subscription/, plan.join("\n"));
  t.notMatch(plan.join("\n"), /Seq Scan/, "no sequential scan");
  t.match((await rig.subscription(id)).health, { status: "healthy", attempts: 1 }, "and counts its own alone");
});
