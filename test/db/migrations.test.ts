// The migrations as a whole: the readiness probe's list of pending migrations names them, and every
// migration can be rolled back and applied again (a down that leaves the schema inconsistent would
// fail the second up or the write through the migrated functions afterwards).
import t from "tap";
import { createDatabase, migrate, pendingMigrations } from "../../db/database.ts";
import { migrationSource } from "../../db/migrations/index.ts";
import { createTenant } from "../../db/principals.ts";
import { createTestDatabase } from "../helpers/database.ts";

const config = { migrationSource, schemaName: "integrator", tableName: "knex_migrations" };

t.test("pendingMigrations names the migrations the database has not applied", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 2, "integrator-test");
  t.teardown(() => db.destroy());
  const names = (await migrationSource.getMigrations([])).map((entry) => migrationSource.getMigrationName(entry));
  t.same(await pendingMigrations(db), [], "none on a migrated database");
  await db.migrate.down(config);
  await db.migrate.down(config);
  t.same(await pendingMigrations(db), names.slice(-2), "the last two, by name, in order");
  t.same(await migrate(db), names.slice(-2), "and migrating applies exactly those");
});

t.test("every migration rolls back and applies again, and the write path works afterwards", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 2, "integrator-test");
  t.teardown(() => db.destroy());
  await db.migrate.rollback(config, true);
  const [applied] = (await db.migrate.list(config)) as [unknown[], unknown[]];
  t.equal(applied.length, 0, "all rolled back");
  await migrate(db);
  t.same(await pendingMigrations(db), []);
  const tenant = await createTenant(db, "after a full round trip");
  await db("integrator.webhook_subscriptions").insert({
    tenant_id: tenant.id,
    url: "https://hooks.example.com/h",
    events: ["*"],
    secret_encrypted: "x",
    created_by: "t",
  });
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    `select id from integrator.submit_intake(?, gen_random_uuid(), 'single', null, null, null, 'received', 1, 0, 't', 'r',
       '[]'::jsonb, 'intake.submitted', 't', '{}'::jsonb)`,
    [tenant.id],
  );
  t.equal(rows.length, 1, "a submission is written");
  const deliveries = await db("integrator.webhook_deliveries")
    .where({ tenant_id: tenant.id })
    .count<{ count: string }[]>();
  t.equal(Number(deliveries[0]?.count), 1, "and its event fanned out to the subscription");
});

t.test(
  "an intake item is indexed by its id once: the primary key (id) and its position in its submission",
  async (t) => {
    const db = createDatabase(await createTestDatabase(t), 2, "integrator-test");
    t.teardown(() => db.destroy());
    const { rows } = await db.raw<{ rows: { indexdef: string }[] }>(
      "select indexdef from pg_indexes where schemaname = 'integrator' and tablename = 'intake_items' order by indexname",
    );
    t.same(
      rows.map((row) => row.indexdef.replace(/^.* USING /, "")),
      ["btree (id)", 'btree (tenant_id, submission_id, "position")'],
      "two unique indexes, each item checked and stored twice, not three times (migration 0020)",
    );
  },
);
