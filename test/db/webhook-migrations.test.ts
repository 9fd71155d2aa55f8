// Webhook migrations on a database that already holds webhook data. 0007_webhook_operations: duplicate
// active URLs are resolved (the oldest stays), every tenant's delivery counter starts exact, and
// emit_event keeps its signature and behaviour while also counting. 0022_queued_jobs_name_their_attempt:
// the deliver_webhook jobs queued before 0021 name the attempt they are for; nothing else changes.
// 0028_canonical_webhook_urls: every subscription URL in its canonical spelling, duplicates resolved as 0007 did.
import t, { type Test } from "tap";
import type { Knex } from "knex";
import { createDatabase, migrate, pendingMigrations } from "../../db/database.ts";
import { migrationSource } from "../../db/migrations/index.ts";
import { createTenant } from "../../db/principals.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { deliveryJobs } from "../helpers/webhooks.ts";
import { canonicalWebhookUrl } from "../../foundation/url-safety.ts";

/**
 * A database of its own, rolled back to the state before `migration` (the template is fully migrated);
 * `migrate` re-applies it and every later one.
 */
async function databaseBefore(t: Test, migration: string): Promise<Knex> {
  const db = createDatabase(await createTestDatabase(t), 5, "integrator-test");
  t.teardown(() => db.destroy());
  const config = { migrationSource, schemaName: "integrator", tableName: "knex_migrations" };
  while (!(await pendingMigrations(db)).includes(migration)) await db.migrate.down(config);
  return db;
}

t.test(
  "upgrading keeps the oldest of duplicate active URLs, counts existing deliveries exactly, and emit_event still fans out",
  async (t) => {
    const db = await databaseBefore(t, "0007_webhook_operations");
    const tenant = await createTenant(db, "before");
    const subscription = (url: string, createdAt: string) =>
      db("integrator.webhook_subscriptions")
        .insert({
          tenant_id: tenant.id,
          url,
          events: ["*"],
          secret_encrypted: "x",
          created_by: "t",
          created_at: createdAt,
        })
        .returning("id");
    const [oldest] = await subscription("https://hooks.example.com/same", "2026-01-01T00:00:00Z");
    const [newer] = await subscription("https://hooks.example.com/same", "2026-02-01T00:00:00Z");
    const [other] = await subscription("https://hooks.example.com/other", "2026-03-01T00:00:00Z");
    await db.raw(
      `insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload)
     select ?, ?, 'scorecard.created', '{}'::jsonb from generate_series(1, 5)`,
      [tenant.id, other.id],
    );

    await migrate(db);

    const active = await db("integrator.webhook_subscriptions")
      .where({ tenant_id: tenant.id, is_active: true })
      .select("id");
    t.same(
      active.map((row: { id: string }) => row.id).sort(),
      [oldest.id, other.id].sort(),
      "the newer duplicate is deactivated",
    );
    t.ok(newer.id);
    const counted = async () =>
      Number(
        (await db("integrator.webhook_delivery_counts").where({ tenant_id: tenant.id }).sum("deliveries as n"))[0]?.n,
      );
    t.equal(await counted(), 5, "the counter starts at the existing deliveries");
    const emitted = await db.raw<{ rows: { n: number }[] }>(
      "select integrator.emit_event(?::uuid, 'scorecard.created', ?::jsonb) as n",
      [tenant.id, JSON.stringify({ scorecard_id: crypto.randomUUID() })],
    );
    t.equal(emitted.rows[0]?.n, 2, "one delivery per active subscription");
    t.equal(await counted(), 7);
  },
);

t.test(
  "upgrading gives each queued deliver_webhook job from before 0021 its delivery's attempts, and leaves every other job as it was",
  async (t) => {
    const db = await databaseBefore(t, "0022_queued_jobs_name_their_attempt");
    t.equal((await pendingMigrations(db))[0], "0022_queued_jobs_name_their_attempt", "back to the state before 0022");
    const tenant = await createTenant(db, "jobs before 0021");
    const [subscription] = await db("integrator.webhook_subscriptions")
      .insert({
        tenant_id: tenant.id,
        url: "https://hooks.example.com/j",
        events: ["*"],
        secret_encrypted: "x",
        created_by: "t",
      })
      .returning("id");
    const delivery = async (attempts: number, status: string) =>
      (
        await db("integrator.webhook_deliveries")
          .insert({
            tenant_id: tenant.id,
            subscription_id: subscription.id,
            event_type: "scorecard.created",
            payload: {},
            attempts,
            status,
          })
          .returning("id")
      )[0].id as string;
    const retried = await delivery(2, "pending");
    const fresh = await delivery(0, "pending");
    const delivered = await delivery(1, "delivered");
    const queued = await delivery(0, "pending");
    const missing = crypto.randomUUID();
    // As jobs were queued before 0021: keyed by delivery, no attempts in the payload.
    const addJob = (payload: Record<string, unknown>, key: string | null) =>
      db.raw("select graphile_worker.add_job('deliver_webhook', ?::json, job_key => ?)", [
        JSON.stringify(payload),
        key,
      ]);
    for (const id of [retried, fresh, delivered, missing])
      await addJob({ tenant_id: tenant.id, delivery_id: id }, `deliver_webhook:${id}`);
    // Queued since 0021, with the attempt it is for (a different number from the delivery's, to be seen kept).
    await addJob({ tenant_id: tenant.id, delivery_id: queued, attempts: 5 }, null);
    // Anything sharing the database can queue a job: ids that are not uuids do not stop the upgrade.
    await addJob({ tenant_id: "not-a-uuid", delivery_id: retried }, null);
    await db.raw("update graphile_worker._private_jobs set locked_at = now(), locked_by = 'old-worker' where key = ?", [
      `deliver_webhook:${fresh}`,
    ]);

    await migrate(db);

    const jobs = await deliveryJobs(db, [retried, fresh, delivered, missing, queued]);
    const payloadOf = (id: string, key: string | null = `deliver_webhook:${id}`) =>
      jobs.find((job) => job.payload.delivery_id === id && job.key === key)?.payload;
    t.same(
      payloadOf(retried),
      { tenant_id: tenant.id, delivery_id: retried, attempts: 2 },
      "a retry's job: the attempts made",
    );
    t.same(payloadOf(fresh), { tenant_id: tenant.id, delivery_id: fresh, attempts: 0 }, "a running job too");
    t.same(
      payloadOf(delivered),
      { tenant_id: tenant.id, delivery_id: delivered, attempts: 1 },
      "a final delivery's job",
    );
    t.same(payloadOf(missing), { tenant_id: tenant.id, delivery_id: missing }, "a job whose delivery is gone is left");
    t.same(
      payloadOf(queued, null),
      { tenant_id: tenant.id, delivery_id: queued, attempts: 5 },
      "a job from since 0021 is left",
    );
    t.same(
      jobs.filter((job) => job.payload.tenant_id === "not-a-uuid").map((job) => job.payload),
      [{ tenant_id: "not-a-uuid", delivery_id: retried }],
      "a malformed payload is left",
    );
    t.same(
      jobs.map((job) => job.key).sort(),
      [null, null, ...[retried, fresh, delivered, missing].map((id) => `deliver_webhook:${id}`)].sort(),
      "keys are unchanged",
    );
  },
);

t.test(
  "upgrading respells every subscription URL canonically; of active ones that turn out the same URL the oldest stays",
  async (t) => {
    const db = await databaseBefore(t, "0028_canonical_webhook_urls");
    const tenant = await createTenant(db, "spellings");
    const other = await createTenant(db, "the same URL elsewhere");
    const subscription = async (tenantId: string, url: string, createdAt: string, isActive = true) =>
      (
        await db("integrator.webhook_subscriptions")
          .insert({
            tenant_id: tenantId,
            url,
            events: ["*"],
            secret_encrypted: "x",
            created_by: "t",
            created_at: createdAt,
            is_active: isActive,
            ...(isActive ? {} : { deactivated_at: createdAt }),
          })
          .returning("id")
      )[0].id as string;
    const spellings = {
      oldest: "https://Hooks.Example.com:443/in/box?",
      newer: "https://hooks.example.com./in/./box",
      fragment: "https://hooks.example.com/in/b%6Fx#section",
      deleted: "https://HOOKS.example.com/in/box",
      another: "https://hooks.example.com/in/box%2f",
      elsewhere: "https://hooks.example.com/in/box?",
    };
    const ids = {
      deleted: await subscription(tenant.id, spellings.deleted, "2025-12-01T00:00:00Z", false),
      oldest: await subscription(tenant.id, spellings.oldest, "2026-01-01T00:00:00Z"),
      newer: await subscription(tenant.id, spellings.newer, "2026-02-01T00:00:00Z"),
      fragment: await subscription(tenant.id, spellings.fragment, "2026-03-01T00:00:00Z"),
      another: await subscription(tenant.id, spellings.another, "2026-04-01T00:00:00Z"),
      elsewhere: await subscription(other.id, spellings.elsewhere, "2026-05-01T00:00:00Z"),
    };

    await migrate(db);

    const rows = await db("integrator.webhook_subscriptions")
      .whereIn("tenant_id", [tenant.id, other.id])
      .select<{ id: string; url: string; is_active: boolean; deactivated_at: Date | null }[]>(
        "id",
        "url",
        "is_active",
        "deactivated_at",
      );
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const [name, raw] of Object.entries(spellings))
      t.equal(
        byId.get(ids[name as keyof typeof ids])?.url,
        canonicalWebhookUrl(new URL(raw)),
        `${name}: the spelling canonicalWebhookUrl gives`,
      );
    t.equal(byId.get(ids.oldest)?.url, "https://hooks.example.com/in/box");
    t.same(
      rows
        .filter((row) => row.is_active)
        .map((row) => row.id)
        .sort(),
      [ids.oldest, ids.another, ids.elsewhere].sort(),
      "the oldest of one URL stays active, per tenant; another path stays",
    );
    t.ok(byId.get(ids.newer)?.deactivated_at, "a newer duplicate is deactivated");
    t.ok(byId.get(ids.fragment)?.deactivated_at, "one that differed by its fragment too");
  },
);
