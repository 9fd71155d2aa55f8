// Migration 0007_webhook_operations on a database that already holds webhook data: duplicate active
// URLs are resolved (the oldest stays), every tenant's delivery counter starts exact, and emit_event
// keeps its signature and behaviour while also counting.
import t from "tap";
import { createDatabase, migrate } from "../db/database.ts";
import { migrationSource } from "../db/migrations/index.ts";
import { createTenant } from "../db/principals.ts";
import { createTestDatabase } from "./helpers/database.ts";

t.test(
  "upgrading keeps the oldest of duplicate active URLs, counts existing deliveries exactly, and emit_event still fans out",
  async (t) => {
    const db = createDatabase(await createTestDatabase(t), 5, "integrator-test");
    t.teardown(() => db.destroy());
    const config = { migrationSource, schemaName: "integrator", tableName: "knex_migrations" };
    const applied = async () =>
      ((await db.migrate.list(config)) as [{ name: string }[], unknown])[0].map((entry) => entry.name);
    // Back to the state before this migration (the template is fully migrated); later ones are re-applied below.
    while ((await applied()).includes("0007_webhook_operations")) await db.migrate.down(config);
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
