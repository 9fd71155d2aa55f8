// The repeatable step after the migrations (db/functions/index.ts): a file is applied when its text
// changed since it was last applied, and every file is applied again once a migration was applied or
// rolled back, so neither a later migration nor a rollback leaves a function other than its file says.
import t from "tap";
import type { Knex } from "knex";
import { createDatabase, migrate, pendingMigrations } from "../../db/database.ts";
import { applyFunctions, FUNCTION_FILES } from "../../db/functions/index.ts";
import { migrationSource } from "../../db/migrations/index.ts";
import { createTenant } from "../../db/principals.ts";
import { createTestDatabase } from "../helpers/database.ts";

const config = { migrationSource, schemaName: "integrator", tableName: "knex_migrations" };

async function migratedDatabase(t: Parameters<typeof createTestDatabase>[0]): Promise<Knex> {
  const db = createDatabase(await createTestDatabase(t), 2, "integrator-test");
  t.teardown(() => db.destroy());
  return db;
}

/** Each function of the schema by signature, as PostgreSQL stores it. */
async function functionsOf(db: Knex): Promise<Record<string, string>> {
  const { rows } = await db.raw<{ rows: { signature: string; definition: string }[] }>(
    `select p.oid::regprocedure::text as signature, pg_get_functiondef(p.oid) as definition
       from pg_proc p where p.pronamespace = 'integrator'::regnamespace`,
  );
  return Object.fromEntries(rows.map((row) => [row.signature, row.definition]));
}

/** The tasks of the jobs queued for an event the tenant's two subscriptions both take. */
async function jobsOfAnEvent(db: Knex, tenantId: string): Promise<string[]> {
  const scorecard = crypto.randomUUID();
  await db.raw("select integrator.emit_event(?::uuid, 'scorecard.created', ?::jsonb)", [
    tenantId,
    JSON.stringify({ scorecard_id: scorecard }),
  ]);
  const { rows } = await db.raw<{ rows: { task: string }[] }>(
    `select k.identifier as task
       from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
      where j.payload->>'tenant_id' = ?
        and exists (select 1 from integrator.webhook_deliveries d
                     where d.payload->'data'->>'scorecard_id' = ?
                       and (d.id::text = j.payload->>'delivery_id' or jsonb_exists((j.payload->'delivery_ids')::jsonb, d.id::text)))
      order by j.id`,
    [tenantId, scorecard],
  );
  return rows.map((row) => row.task);
}

/** The migration whose down the rollback test reads: it puts back an older queue_delivery_jobs. */
const ROLLED_BACK = "0023_an_event_s_deliveries_in_one_job";

/** Rolls back every migration down to ROLLED_BACK, included; returns their names, oldest first. */
async function rollBackThrough(db: Knex): Promise<string[]> {
  const rolledBack: string[] = [];
  while (!(await pendingMigrations(db)).includes(ROLLED_BACK)) {
    const [, names] = (await db.migrate.down(config)) as [number, string[]];
    rolledBack.unshift(...names);
  }
  return rolledBack;
}

async function tenantWithTwoSubscriptions(db: Knex): Promise<string> {
  const tenant = await createTenant(db, "two subscriptions");
  for (const url of ["https://hooks.example.com/one", "https://hooks.example.com/two"])
    await db("integrator.webhook_subscriptions").insert({
      tenant_id: tenant.id,
      url,
      events: ["*"],
      secret_encrypted: "x",
      created_by: "t",
    });
  return tenant.id;
}

t.test("on a migrated database nothing is applied again", async (t) => {
  const db = await migratedDatabase(t);
  t.same(await applyFunctions(db), []);
  const { rows } = await db.raw<{ rows: { name: string }[] }>(
    "select name from integrator.applied_functions order by name",
  );
  t.same(
    rows.map((row) => row.name),
    [...FUNCTION_FILES].sort(),
    "every file is recorded",
  );
});

t.test("a file whose text changed since it was applied is applied again, and only it", async (t) => {
  const db = await migratedDatabase(t);
  const current = await functionsOf(db);
  const signature = "integrator.delivery_backlog(uuid)";
  // As a release whose file said otherwise left it.
  await db.raw((current[signature] ?? "").replace("limit 1000", "limit 10"));
  await db.raw("update integrator.applied_functions set checksum = 'of an older text' where name = 'delivery_backlog'");
  t.not((await functionsOf(db))[signature], current[signature]);

  t.same(await applyFunctions(db), ["delivery_backlog"]);
  t.same(await functionsOf(db), current, "the file's text is back");
});

t.test(
  "a rollback leaves the down's function texts, consistent with the schema it restores, and the next migrate applies every file again",
  async (t) => {
    const db = await migratedDatabase(t);
    const current = await functionsOf(db);
    const tenantId = await tenantWithTwoSubscriptions(db);
    t.same(await jobsOfAnEvent(db, tenantId), ["deliver_webhooks"], "today: one job for an event's deliveries");

    const rolledBack = await rollBackThrough(db);
    t.equal(rolledBack[0], ROLLED_BACK);
    t.not(
      (await functionsOf(db))["integrator.queue_delivery_jobs(uuid,uuid[],integer,timestamp with time zone,integer)"],
      current["integrator.queue_delivery_jobs(uuid,uuid[],integer,timestamp with time zone,integer)"],
      "the down put back its older queue_delivery_jobs",
    );
    t.same(
      await jobsOfAnEvent(db, tenantId),
      ["deliver_webhook", "deliver_webhook"],
      "which queues a job per delivery, as the rolled-back release does",
    );

    // The up's text is the one the migration was written with; the step then applies every file, though
    // none of their texts changed.
    await db.migrate.latest(config);
    t.same(await applyFunctions(db), [...FUNCTION_FILES], "every file, in order");
    t.same(await functionsOf(db), current, "the functions are the files' again");
    t.same(await jobsOfAnEvent(db, tenantId), ["deliver_webhooks"]);

    await rollBackThrough(db);
    t.same(await migrate(db), rolledBack, "migrate() does the same at every start");
    t.same(await functionsOf(db), current);
    t.same(await applyFunctions(db), [], "and then nothing is left to apply");
  },
);

t.test(
  "submit_intake, which replicas of release 0.1.0 write through during a rolling upgrade, writes on today's schema",
  async (t) => {
    const db = await migratedDatabase(t);
    const tenantId = await tenantWithTwoSubscriptions(db);
    const submissionId = crypto.randomUUID();
    const items = [0, 1].map((position) => ({
      id: crypto.randomUUID(),
      position,
      filename: `${position}.pdf`,
      file_size: 1,
      mime_type: "application/pdf",
      status: "uploaded",
    }));
    // The statement as 0.1.0's db/intake.ts sends it.
    await db.raw("select * from integrator.submit_intake(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?::jsonb)", [
      tenantId,
      submissionId,
      "batch",
      "ref",
      null,
      null,
      "received",
      2,
      0,
      "ada",
      "req",
      JSON.stringify(items),
      "intake.batch_submitted",
      "ada",
      "{}",
    ]);
    const written = await db("integrator.intake_items").where({ tenant_id: tenantId, submission_id: submissionId });
    t.equal(written.length, 2, "the submission's items are written");
    const deliveries = await db("integrator.webhook_deliveries")
      .where({ tenant_id: tenantId, event_type: "intake.batch_submitted" })
      .count<{ count: string }[]>();
    t.equal(Number(deliveries[0]?.count), 2, "and its event fans out to both subscriptions");
  },
);
