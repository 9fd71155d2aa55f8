// Attempts recorded together (db/webhooks/sending.ts recordAttempts, integrator.record_delivery_attempts): each
// as its own call would record it, in one statement; an attempt already recorded changes nothing; a retry's
// job carries its own trace context; and when the statement fails, each attempt is recorded by a call of its
// own, so that one bad record does not lose the others. Deliveries read together
// (findDeliveriesToSend) are each what findDeliveryToSend reads. A real PostgreSQL.
import t from "tap";
import {
  findDeliveriesToSend,
  findDeliveryToSend,
  recordAttempts,
  type AttemptRecord,
} from "../../db/webhooks/sending.ts";
import { jobsOfDelivery, startWebhookRig, testCa } from "../helpers/webhooks.ts";

const ca = testCa(t);

t.test("attempts recorded together, each as its own call would, and once", async (t) => {
  const rig = await startWebhookRig(t, ca, { worker: false });
  const { db } = rig.server.services;
  await rig.subscribe(rig.receiver.url("/a"));
  await rig.subscribe(rig.receiver.url("/b"));
  await rig.emitIntake();
  await rig.emitIntake();
  const deliveries = await rig.deliveries();
  t.equal(deliveries.length, 4);
  const ids = deliveries.map((delivery) => delivery.id);
  const tenantId = rig.tenant.tenantId;

  const read = await findDeliveriesToSend(db, [
    ...ids.map((deliveryId) => ({ tenantId, deliveryId })),
    { tenantId, deliveryId: crypto.randomUUID() },
  ]);
  t.equal(read.length, 5, "one answer per delivery asked for, in order");
  t.equal(read[4], undefined, "none for a delivery that does not exist");
  for (const [index, id] of ids.entries())
    t.same(read[index], await findDeliveryToSend(db, tenantId, id), "each as read alone");

  const attempt = (deliveryId: string, outcome: "delivered" | "retry" | "failed"): AttemptRecord => ({
    tenantId,
    deliveryId,
    attemptsBefore: 0,
    attemptedAt: new Date(),
    durationMs: 7,
    status: outcome === "delivered" ? "delivered" : outcome === "retry" ? "pending" : "failed",
    responseCode: outcome === "delivered" ? 204 : 503,
    errorMessage: outcome === "delivered" ? null : "HTTP status 503",
    errorClass: outcome === "delivered" ? null : "http_status",
    failure: outcome === "delivered" ? null : "The endpoint answered 503 Service Unavailable.",
    requestHeaders: { "X-Service-Review-Delivery": deliveryId },
    response: { headers: { "content-type": "text/plain" }, body: "answer é", bodyTruncated: false },
    ...(outcome === "retry" ? { retryAt: new Date(Date.now() + 60_000) } : {}),
    health: { disableAfterFailedDeliveries: 0, disableAfterFailingDays: 0 },
  });
  const [first, second, third, fourth] = ids as [string, string, string, string];
  const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const batch = [
    { attempt: attempt(first, "delivered") },
    { attempt: attempt(second, "retry"), trace: { traceparent, tracestate: "k=v" } },
    { attempt: attempt(third, "retry") },
    { attempt: attempt(fourth, "failed") },
  ];
  t.same(await recordAttempts(db, batch), [true, true, true, true], "every one applied");
  const after = new Map((await rig.deliveries()).map((delivery) => [delivery.id, delivery]));
  t.match(after.get(first), { status: "delivered", attempts: 1, response_code: 204 });
  t.match(after.get(second), { status: "pending", attempts: 1, error_message: "HTTP status 503" });
  t.match(after.get(fourth), { status: "failed", attempts: 1 });
  const attempts = await db("integrator.webhook_delivery_attempts")
    .whereIn("delivery_id", ids)
    .select<{ delivery_id: string; number: number; response_body: string }[]>("delivery_id", "number", "response_body");
  t.equal(attempts.length, 4, "one attempt row each");
  t.ok(
    attempts.every((row) => row.number === 1 && row.response_body === "answer é"),
    "numbered and kept as sent",
  );
  const retryOf = async (id: string) =>
    (await jobsOfDelivery(db, id)).find((job) => job.task === "deliver_webhook" && job.payload.attempts === 1);
  const traced = await retryOf(second);
  t.ok(traced, "the retry's job is queued, for the second attempt");
  t.match(traced?.payload, { traceparent, tracestate: "k=v" }, "carrying the trace context of its own attempt");
  const untraced = await retryOf(third);
  t.ok(untraced, "the other retry's job too");
  t.notOk(
    untraced && "traceparent" in untraced.payload,
    "without a trace context: the one before it in the batch does not leak into it",
  );

  t.same(await recordAttempts(db, batch), [false, false, false, false], "recorded again by another run: nothing");
  t.equal(
    await db("integrator.webhook_delivery_attempts")
      .whereIn("delivery_id", ids)
      .count<{ count: string }[]>("* as count")
      .then((rows) => Number(rows[0]?.count)),
    4,
    "no second attempt row",
  );
});

t.test("a batch that fails is recorded one by one: the good records apply, the bad one fails alone", async (t) => {
  const rig = await startWebhookRig(t, ca, { worker: false });
  const { db } = rig.server.services;
  await rig.subscribe(rig.receiver.url("/a"));
  await rig.subscribe(rig.receiver.url("/b"));
  await rig.emitIntake();
  const [one, two] = (await rig.deliveries()).map((delivery) => delivery.id) as [string, string];
  const record = (deliveryId: string, status: string): AttemptRecord => ({
    tenantId: rig.tenant.tenantId,
    deliveryId,
    attemptsBefore: 0,
    attemptedAt: new Date(),
    durationMs: 3,
    // A status the table refuses fails the statement that writes it.
    status: status as AttemptRecord["status"],
    responseCode: 204,
    errorMessage: null,
    errorClass: null,
    failure: null,
    requestHeaders: {},
    response: null,
    health: { disableAfterFailedDeliveries: 0, disableAfterFailingDays: 0 },
  });
  const results = await recordAttempts(db, [{ attempt: record(one, "delivered") }, { attempt: record(two, "lost") }]);
  t.equal(results[0], true, "the good record applied");
  t.ok(results[1] instanceof Error, "the bad one answers its own error");
  const after = new Map((await rig.deliveries()).map((delivery) => [delivery.id, delivery]));
  t.match(after.get(one), { status: "delivered", attempts: 1 });
  t.match(after.get(two), { status: "pending", attempts: 0 }, "the bad one's delivery is as it was");
});

t.test("an event's deliveries are read by primary key, pair by pair, on tables never analyzed", async (t) => {
  const rig = await startWebhookRig(t, ca, { worker: false });
  const { db } = rig.server.services;
  const tenantId = rig.tenant.tenantId;
  // 100 subscriptions and two events' deliveries, never analyzed: the state in which the arrays joined to the
  // tables as a whole were planned to scan the deliveries subscription by subscription.
  const subscriptions = await db("integrator.webhook_subscriptions")
    .insert(
      Array.from({ length: 100 }, (_, index) => ({
        tenant_id: tenantId,
        url: rig.receiver.url(`/plan/${index}`),
        events: ["intake.submitted"],
        secret_encrypted: "sealed",
        created_by: "plan test",
      })),
    )
    .returning<{ id: string }[]>("id");
  t.equal(subscriptions.length, 100);
  await rig.emitIntake();
  await rig.emitIntake();
  const ids = (await rig.deliveries()).slice(0, 100).map((delivery) => delivery.id);
  t.equal(ids.length, 100);

  // What the call scanned, as PostgreSQL counts it for the connection (the counts it has not yet
  // published, read before and after the call, on the transaction's one connection): each index of the
  // deliveries, and the table's sequential scans.
  const scans = await db.transaction(async (trx) => {
    const count = async () => {
      const counted = await trx.raw<{ rows: { name: string; scans: string; fetched: string }[] }>(
        `select indexrelid::regclass::text as name, pg_stat_get_xact_numscans(indexrelid) as scans,
                pg_stat_get_xact_tuples_fetched(indexrelid) as fetched
           from pg_index where indrelid = 'integrator.webhook_deliveries'::regclass
         union all
         select 'sequential', pg_stat_get_xact_numscans('integrator.webhook_deliveries'::regclass), 0`,
      );
      return new Map(counted.rows.map((row) => [row.name, { scans: Number(row.scans), fetched: Number(row.fetched) }]));
    };
    const before = await count();
    const read = await trx.raw<{ rows: unknown[] }>(
      "select * from integrator.deliveries_to_attempt(?::uuid[], ?::uuid[])",
      [ids.map(() => tenantId), ids],
    );
    t.equal(read.rows.length, 100, "every delivery asked for is read");
    const after = await count();
    return new Map(
      [...after].map(([name, { scans, fetched }]) => [
        name,
        { scans: scans - (before.get(name)?.scans ?? 0), fetched: fetched - (before.get(name)?.fetched ?? 0) },
      ]),
    );
  });
  t.same(
    scans.get("integrator.webhook_deliveries_pkey"),
    { scans: 100, fetched: 100 },
    "one look-up by primary key per delivery, one row each",
  );
  const others = [...scans].filter(([name, count]) => name !== "integrator.webhook_deliveries_pkey" && count.scans > 0);
  t.same(others, [], "no other index and no sequential scan");
});
