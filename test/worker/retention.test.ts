// Retention (issue 11 point 9): the scheduled purge_webhook_deliveries job, run by a real graphile-worker,
// deletes final deliveries older than WEBHOOK_RETENTION_DAYS with their attempts, in batches of
// WEBHOOK_PURGE_BATCH_SIZE, keeps pending and recent ones, and keeps each tenant's total exact.
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

/** A tenant with `count` deliveries created `daysAgo` days ago in the given status, each with one attempt row. */
async function deliveries(who: TestTenant, count: number, daysAgo: number, status: string): Promise<string[]> {
  const db = rig.server.services.db;
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
    `insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload, status, attempts, created_at)
     select ?, ?, 'scorecard.created', ?::jsonb, ?, 1, now() - make_interval(days => ?) - make_interval(secs => g)
       from generate_series(1, ?) g
     returning id`,
    [
      who.tenantId,
      subscription.id,
      JSON.stringify({
        event: "scorecard.created",
        tenant_id: who.tenantId,
        timestamp: "2026-10-01T00:00:00.000Z",
        data: { scorecard_id: crypto.randomUUID() },
      }),
      status,
      daysAgo,
      count,
    ],
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
