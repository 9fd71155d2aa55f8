// Retention: the scheduled purge_webhook_deliveries job, run by a real graphile-worker,
// deletes final deliveries older than WEBHOOK_RETENTION_DAYS with their attempts, in batches of
// WEBHOOK_PURGE_BATCH_SIZE, keeps pending and recent ones, and keeps each tenant's total exact; an event
// goes with the last of its deliveries.
import t from "tap";
import { JOB } from "../../db/jobs.ts";
import { crontab } from "../../worker/crontab.ts";
import { createTestTenant, type TestTenant } from "../helpers/server.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);
let rig: WebhookRig;

t.before(async () => {
  rig = await startWebhookRig(t, ca, { env: { WEBHOOK_RETENTION_DAYS: "30", WEBHOOK_PURGE_BATCH_SIZE: "2" } });
});

async function total(who: TestTenant): Promise<number> {
  const res = await rig.server.request("/v1/webhooks/deliveries", { token: who.token });
  return ((await res.json()) as { total: number }).total;
}

/**
 * A tenant with `count` deliveries of one event created `daysAgo` days ago in the given status, each with one
 * attempt row.
 */
async function deliveries(who: TestTenant, count: number, daysAgo: number, status: string): Promise<string[]> {
  const db = rig.server.services.db;
  const eventId = crypto.randomUUID();
  const envelope = JSON.stringify({
    id: `evt_${eventId}`,
    event: "scorecard.created",
    tenant_id: who.tenantId,
    timestamp: "2026-10-01T00:00:00.000Z",
    data: { scorecard_id: crypto.randomUUID() },
  });
  await db.raw(
    `insert into integrator.webhook_events (tenant_id, id, event_type, payload, created_at)
     values (?, ?, 'scorecard.created', ?::jsonb, now() - make_interval(days => ?))`,
    [who.tenantId, eventId, envelope, daysAgo],
  );
  const [subscription] = await db("integrator.webhook_subscriptions")
    .insert({
      tenant_id: who.tenantId,
      url: `https://hooks.example.com/${crypto.randomUUID()}`,
      events: ["*"],
      secret_encrypted: "x",
      created_by: "test",
      is_active: false,
    })
    .returning("id");
  const rows = await db.raw<{ rows: { id: string }[] }>(
    `insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_id, event_type, payload, status, attempts, created_at)
     select ?, ?, ?, 'scorecard.created', ?::jsonb, ?, 1, now() - make_interval(days => ?) - make_interval(secs => g)
       from generate_series(1, ?) g
     returning id`,
    [who.tenantId, subscription.id, eventId, envelope, status, daysAgo, count],
  );
  const ids = rows.rows.map((row) => row.id);
  if (ids.length > 0)
    await db("integrator.webhook_delivery_attempts").insert(
      ids.map((id) => ({
        tenant_id: who.tenantId,
        delivery_id: id,
        number: 1,
        attempted_at: new Date(),
        duration_ms: 5,
        outcome: status === "delivered" ? "delivered" : "failed",
        response_code: status === "delivered" ? 204 : 500,
        error_class: status === "delivered" ? null : "http_status",
      })),
    );
  return ids;
}

async function runPurge(): Promise<void> {
  await rig.server.services.db.raw("select graphile_worker.add_job(?, '{}'::json)", [JOB.purgeWebhookDeliveries]);
  await waitFor(
    async () =>
      Number(
        (
          await rig.server.services
            .db("graphile_worker.jobs")
            .where({ task_identifier: JOB.purgeWebhookDeliveries })
            .count<{ count: number }[]>("* as count")
        )[0]?.count ?? 0,
      ),
    (left) => left === 0,
  );
}

t.test("the purge job is scheduled by the crontab", async (t) => {
  t.match(crontab, new RegExp(`^\\S+ \\S+ \\S+ \\S+ \\S+ ${JOB.purgeWebhookDeliveries}\\b`, "m"));
});

t.test(
  "final deliveries older than WEBHOOK_RETENTION_DAYS are purged with their attempts, in batches, and the total follows",
  async (t) => {
    const who = await createTestTenant(rig.server.services);
    const old = [...(await deliveries(who, 3, 31, "delivered")), ...(await deliveries(who, 2, 40, "failed"))];
    const recent = await deliveries(who, 2, 29, "delivered");
    const stuck = await deliveries(who, 1, 45, "pending");
    t.equal(await total(who), 8);
    await runPurge();
    const db = rig.server.services.db;
    const left = (await db("integrator.webhook_deliveries").where({ tenant_id: who.tenantId }).select("id")).map(
      (row: { id: string }) => row.id,
    );
    t.same(
      left.sort(),
      [...recent, ...stuck].sort(),
      "old final ones gone (5 rows in batches of 2); recent and pending kept",
    );
    const attempts = await db("integrator.webhook_delivery_attempts")
      .where({ tenant_id: who.tenantId })
      .whereIn("delivery_id", old);
    t.equal(attempts.length, 0, "their attempts went with them");
    t.equal(await total(who), 3, "the total is exact after the purge");
  },
);

t.test("the purge touches every tenant and only what is past retention", async (t) => {
  const a = await createTestTenant(rig.server.services);
  const b = await createTestTenant(rig.server.services);
  await deliveries(a, 3, 31, "delivered");
  await deliveries(b, 1, 31, "failed");
  await deliveries(b, 2, 1, "delivered");
  await runPurge();
  t.equal(await total(a), 0);
  t.equal(await total(b), 2);
});

t.test("a purged delivery answers 404", async (t) => {
  const who = await createTestTenant(rig.server.services);
  const [id] = await deliveries(who, 1, 31, "delivered");
  await runPurge();
  t.equal((await rig.server.request(`/v1/webhooks/deliveries/${id}`, { token: who.token })).status, 404);
});

/** The event id (`evt_…`) of a delivery. */
async function eventOf(deliveryId: string): Promise<string> {
  const row = await rig.server.services
    .db("integrator.webhook_deliveries")
    .where({ id: deliveryId })
    .first<{ event_id: string }>("event_id");
  return `evt_${row?.event_id}`;
}

t.test(
  "an event is purged with the last of its deliveries: kept while a pending delivery or a recent resend of it is",
  async (t) => {
    const who = await createTestTenant(rig.server.services);
    const db = rig.server.services.db;
    const eventStatus = async (eventId: string) =>
      (await rig.server.request(`/v1/events/${eventId}`, { token: who.token })).status;
    const [purged] = await deliveries(who, 2, 31, "delivered");
    const [resentOld] = await deliveries(who, 1, 31, "failed");
    const [pending] = await deliveries(who, 1, 45, "pending");
    if (!purged || !resentOld || !pending) return t.fail("no deliveries");
    const purgedEvent = await eventOf(purged);
    const resentEvent = await eventOf(resentOld);
    const pendingEvent = await eventOf(pending);
    // A resend of the old failed delivery, made today: a delivery of the same event.
    await db.raw(
      `insert into integrator.webhook_deliveries
         (tenant_id, subscription_id, event_id, event_type, payload, status, attempts, origin, redelivery_of)
       select tenant_id, subscription_id, event_id, event_type, payload, 'delivered', 1, 'redelivery', id
         from integrator.webhook_deliveries where id = ?`,
      [resentOld],
    );
    for (const eventId of [purgedEvent, resentEvent, pendingEvent]) t.equal(await eventStatus(eventId), 200);

    await runPurge();
    t.equal(await eventStatus(purgedEvent), 404, "every delivery of it purged: the event with them");
    t.equal(await eventStatus(resentEvent), 200, "its old delivery purged, its recent resend kept: the event too");
    t.equal(await eventStatus(pendingEvent), 200, "a pending delivery is never purged, nor its event");
    const res = await rig.server.request(`/v1/events/${resentEvent}`, { token: who.token });
    t.match(((await res.json()) as { deliveries: { origin: string }[] }).deliveries, [{ origin: "redelivery" }]);

    // The resend ages past retention too.
    await db("integrator.webhook_deliveries")
      .where({ tenant_id: who.tenantId })
      .whereRaw("event_id = ?::uuid", [resentEvent.slice("evt_".length)])
      .update({ created_at: db.raw("now() - interval '31 days'") });
    await runPurge();
    t.equal(await eventStatus(resentEvent), 404, "purged with the last of its deliveries");
    const listed = await rig.server.request("/v1/events", { token: who.token });
    t.same(
      ((await listed.json()) as { events: { id: string }[] }).events.map((event) => event.id),
      [pendingEvent],
      "the list shows what is kept",
    );
  },
);
