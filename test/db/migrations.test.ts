// The migrations as a whole: the readiness probe's list of pending migrations names them, and every
// migration can be rolled back and applied again (a down that leaves the schema inconsistent would
// fail the second up or the write through the migrated functions afterwards).
import t from "tap";
import type { Knex } from "knex";
import { createDatabase, migrate, pendingMigrations } from "../../db/database.ts";
import { findSubmission, insertSubmissionWithEvent } from "../../db/intake.ts";
import { migrationSource } from "../../db/migrations/index.ts";
import { createTenant } from "../../db/principals.ts";
import { createTestDatabase } from "../helpers/database.ts";

const config = { migrationSource, schemaName: "integrator", tableName: "knex_migrations" };

/** A submission of `items` pending items written through the service's write path (db/intake.ts). */
function writeSubmission(db: Knex, tenantId: string, items: number) {
  return insertSubmissionWithEvent(
    db,
    {
      tenantId,
      kind: items === 1 ? "single" : "batch",
      externalReference: null,
      module: null,
      tier: null,
      status: "received",
      acceptedCount: items,
      failedCount: 0,
      createdBy: "t",
      requestId: "r",
    },
    Array.from({ length: items }, (_, position) => ({
      filename: `${position}.pdf`,
      file_size: 1,
      mime_type: "application/pdf",
      item_metadata: null,
      status: "pending" as const,
      error_message: null,
    })),
    {
      action: items === 1 ? "intake.submitted" : "intake.batch_submitted",
      actor: "t",
      requestId: "r",
      details: {},
    },
  );
}

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
  const submission = await writeSubmission(db, tenant.id, 1);
  t.same((await findSubmission(db, tenant.id, submission.id))?.submission, submission, "a submission is written");
  const deliveries = await db("integrator.webhook_deliveries")
    .where({ tenant_id: tenant.id })
    .count<{ count: string }[]>();
  t.equal(Number(deliveries[0]?.count), 1, "and its event fanned out to the subscription");
});

t.test(
  "an intake item is indexed by its id once: the tenant-led primary key (tenant_id, id) and its position in its submission",
  async (t) => {
    const db = createDatabase(await createTestDatabase(t), 2, "integrator-test");
    t.teardown(() => db.destroy());
    const { rows } = await db.raw<{ rows: { indexdef: string }[] }>(
      "select indexdef from pg_indexes where schemaname = 'integrator' and tablename = 'intake_items' order by indexname",
    );
    t.same(
      rows.map((row) => row.indexdef.replace(/^.* USING /, "")),
      ["btree (tenant_id, id)", 'btree (tenant_id, submission_id, "position")'],
      "two unique indexes, each item checked and stored twice, not three times (0020), both led by tenant_id (0031)",
    );
  },
);

t.test(
  "0031 keys intake items by (tenant_id, id), taking over an index built beforehand, and its down puts (id) back",
  async (t) => {
    const db = createDatabase(await createTestDatabase(t), 2, "integrator-test");
    t.teardown(() => db.destroy());
    const tenant = await createTenant(db, "items keyed by tenant");
    await writeSubmission(db, tenant.id, 2);
    const primaryKey = async () =>
      (
        await db.raw<{ rows: { definition: string }[] }>(
          "select pg_get_constraintdef(oid) as definition from pg_constraint where conname = 'intake_items_pkey'",
        )
      ).rows.map((row) => row.definition);
    const indexes = async () =>
      (
        await db.raw<{ rows: { indexname: string }[] }>(
          "select indexname from pg_indexes where schemaname = 'integrator' and tablename = 'intake_items' order by 1",
        )
      ).rows.map((row) => row.indexname);
    while ((await pendingMigrations(db))[0] !== "0031_intake_items_keyed_by_tenant") await db.migrate.down(config);
    t.same(await primaryKey(), ["PRIMARY KEY (id)"], "rolled back: the key of 0020");
    // What docs/operating.md tells the operator of a large table to run before upgrading.
    await db.raw(
      "create unique index concurrently intake_items_tenant_id_id on integrator.intake_items (tenant_id, id)",
    );
    await migrate(db);
    t.same(await primaryKey(), ["PRIMARY KEY (tenant_id, id)"]);
    t.same(
      await indexes(),
      ["intake_items_pkey", "intake_items_submission_position"],
      "the index built beforehand is the key",
    );
    const items = await db("integrator.intake_items").where({ tenant_id: tenant.id }).count<{ count: string }[]>();
    t.equal(Number(items[0]?.count), 2, "the items are kept");
  },
);
