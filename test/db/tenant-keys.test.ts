// Ready for Citus: every tenant table leads its primary key, unique indexes and foreign keys
// with tenant_id, and every statement on a tenant table names its tenant; the global tables and
// graphile-worker's schema are the listed exceptions, each with its role (db/distribution.ts). Citus itself
// is not installed here: these checks read plain PostgreSQL's catalog and the service's SQL text.
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import type { Knex } from "knex";
import { createDatabase, migrate, pendingMigrations } from "../../db/database.ts";
import { migrationSource } from "../../db/migrations/index.ts";
import { DISTRIBUTED_TABLES, GLOBAL_TABLES, distributionStatements } from "../../db/distribution.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { ROOT } from "../helpers/repository-copy.ts";
import { catalogFindings, statementFindings } from "../helpers/tenant-rules.ts";

/** The files holding the service's statements: db/*.ts (migrations aside: frozen history) and the SQL functions. */
function sourceFiles(): string[] {
  const list = (folder: string, ending: string) =>
    fs
      .readdirSync(path.join(ROOT, folder))
      .filter((name) => name.endsWith(ending))
      .map((name) => `${folder}/${name}`);
  return [...list("db", ".ts"), ...list("db/functions", ".sql")];
}

t.test("the migrated schema keeps the rules: no finding", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 2, "integrator-test");
  t.teardown(() => db.destroy());
  t.same(await catalogFindings(db), []);
  const { rows } = await db.raw<{ rows: { name: string }[] }>(
    "select table_name as name from information_schema.tables where table_schema = 'integrator'",
  );
  t.ok(
    DISTRIBUTED_TABLES.every((name) => rows.some((row) => row.name === name)),
    "every distributed table exists (a finding would say otherwise)",
  );
  t.equal(
    rows.length,
    DISTRIBUTED_TABLES.length + Object.keys(GLOBAL_TABLES).length,
    "and each table is classified once",
  );
});

/** What catalogFindings reports once `sql` has run, in a transaction rolled back afterwards. */
async function findingsAfter(db: Knex, sql: string): Promise<string[]> {
  const trx = await db.transaction();
  try {
    await trx.raw(sql);
    return await catalogFindings(trx);
  } finally {
    await trx.rollback();
  }
}

t.test("a table, index or foreign key added against the rules is reported", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 1, "integrator-test");
  t.teardown(() => db.destroy());
  const findings = await findingsAfter(
    db,
    `
    -- A new table keyed by id alone, classified nowhere, referring to submissions led by their id.
    create table integrator.intake_notes (tenant_id uuid not null, id uuid primary key, submission_id uuid not null);
    alter table integrator.intake_notes add constraint notes_submission
      foreign key (submission_id, tenant_id) references integrator.intake_submissions (id, tenant_id);
    -- A unique index on an existing tenant table that does not lead with tenant_id.
    create unique index deliveries_by_event_and_subscription on integrator.webhook_deliveries (event_id, subscription_id);
    -- A reference table referring to a tenant table, and a table without tenant_id.
    alter table integrator.partners add column last_note uuid;
    alter table integrator.partners add constraint partners_last_note
      foreign key (last_note) references integrator.intake_notes (id);
    create table integrator.stray (id uuid primary key);
    `,
  );
  const expected = [
    /^integrator\.intake_notes: not classified/,
    /^integrator\.stray: not classified/,
    /^integrator\.stray: a tenant table without a not-null tenant_id$/,
    /^integrator\.intake_notes: primary key intake_notes_pkey does not lead with tenant_id \(.*btree \(id\)\)$/,
    /^integrator\.stray: primary key stray_pkey does not lead with tenant_id/,
    /^integrator\.webhook_deliveries: unique index deliveries_by_event_and_subscription does not lead with tenant_id/,
    /^integrator\.intake_notes: foreign key notes_submission .* between tenant tables does not lead with tenant_id on both sides$/,
    /^integrator\.partners: foreign key partners_last_note .*: a reference table cannot refer to a tenant table$/,
  ];
  for (const pattern of expected)
    t.ok(
      findings.some((finding) => pattern.test(finding)),
      `reported: ${pattern.source}`,
    );
  t.equal(findings.length, expected.length, `and nothing else:\n${findings.join("\n")}`);
  t.same(await catalogFindings(db), [], "all of it rolled back: no finding again");
});

t.test("with 0031 rolled back, the item keyed by its id alone (as 0020 made it) is reported", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 2, "integrator-test");
  t.teardown(() => db.destroy());
  const config = { migrationSource, schemaName: "integrator", tableName: "knex_migrations" };
  while ((await pendingMigrations(db))[0] !== "0031_intake_items_keyed_by_tenant") await db.migrate.down(config);
  // Tables later migrations create are gone too; what is left to report is the key.
  const later = /: classified in db\/distribution\.ts but not in the database$/;
  t.same(
    (await catalogFindings(db)).filter((finding) => !later.test(finding)),
    [
      "integrator.intake_items: primary key intake_items_pkey does not lead with tenant_id (CREATE UNIQUE INDEX intake_items_pkey ON integrator.intake_items USING btree (id))",
    ],
  );
  await migrate(db);
  t.same(await catalogFindings(db), [], "migrated again, no finding");
});

t.test("a table classified in db/distribution.ts but missing from the database is reported", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 1, "integrator-test");
  t.teardown(() => db.destroy());
  t.same(await findingsAfter(db, "drop table integrator.webhook_delivery_attempts"), [
    "integrator.webhook_delivery_attempts: classified in db/distribution.ts but not in the database",
  ]);
});

t.test("every statement of db/ on a tenant table names its tenant", async (t) => {
  const files = sourceFiles();
  t.ok(files.includes("db/intake.ts") && files.includes("db/functions/emit_event.sql"), "the files are found");
  const findings = files.flatMap((file) =>
    statementFindings(file, fs.readFileSync(path.join(ROOT, file), "utf8"), DISTRIBUTED_TABLES),
  );
  t.same(findings, []);
});

t.test("the statement check reports a statement that does not name the tenant", async (t) => {
  const tables = DISTRIBUTED_TABLES;
  // Statements main had before this check (an item looked up by id alone, a purge across every tenant, the
  // tenants with deliveries read from a tenant table), and a join naming one side's tenant only.
  const breaches = `
export async function lockItem(db: Knex, itemId: string): Promise<(ItemRow & { tenant_id: string }) | undefined> {
  return db("integrator.intake_items").where({ id: itemId }).forUpdate().first([...ITEM_COLUMNS, "tenant_id"]);
}
export async function purge(db: Knex): Promise<void> {
  await db.raw(\`delete from integrator.idempotency_keys where ctid in (
      select ctid from integrator.idempotency_keys where expires_at <= now() limit ?)\`, [5000]);
}
export async function tenantsWithDeliveries(db: Knex): Promise<string[]> {
  const rows = await db("integrator.webhook_delivery_counts").distinct<{ tenant_id: string }[]>("tenant_id");
  return rows.map((row) => row.tenant_id);
}
`;
  const findings = statementFindings("db/example.ts", breaches, tables);
  t.equal(findings.length, 4, findings.join("\n"));
  t.match(findings[0], /^db\/example\.ts: intake_items without its tenant in: .*where\(\{ id: itemId \}\)/);
  t.match(findings[1], /^db\/example\.ts: idempotency_keys without its tenant in: .*delete from/);
  t.match(findings[2], /^db\/example\.ts: idempotency_keys without its tenant in: .*delete from/);
  t.match(findings[3], /^db\/example\.ts: webhook_delivery_counts without its tenant/);
  const join = `create function integrator.f(p_tenant_id uuid) returns bigint language sql as $$
  select count(*) from integrator.webhook_deliveries d
    join integrator.webhook_subscriptions s on s.id = d.subscription_id
   where d.tenant_id = p_tenant_id;
$$;`;
  const joined = statementFindings("db/functions/f.sql", join, tables);
  t.equal(joined.length, 1);
  t.match(joined[0], /^db\/functions\/f\.sql: webhook_subscriptions without its tenant/);
  t.same(
    statementFindings("db/functions/f.sql", join.replace("on s.id", "on s.tenant_id = d.tenant_id and s.id"), tables),
    [],
    "named on both sides, nothing is reported",
  );
  const inserted = statementFindings(
    "db/functions/g.sql",
    "insert into integrator.audit_actions (action, actor) values ('a', 'b');\n-- integrator.audit_actions in a comment",
    tables,
  );
  t.equal(inserted.length, 1, "an insert without tenant_id among its columns (a comment is not a statement)");
  t.match(inserted[0], /audit_actions without its tenant/);
});

t.test("the distribution plan creates reference tables first, then the tenant tables co-located", async (t) => {
  const statements = distributionStatements();
  t.same(statements.slice(0, 4), [
    "select create_reference_table('integrator.tenants');",
    "select create_reference_table('integrator.partners');",
    "select create_reference_table('integrator.users');",
    "select create_reference_table('integrator.api_clients');",
  ]);
  t.equal(statements[4], "select create_distributed_table('integrator.intake_submissions', 'tenant_id');");
  t.equal(statements.length, 4 + DISTRIBUTED_TABLES.length);
  t.ok(
    statements
      .slice(5)
      .every((statement) => statement.endsWith(", 'tenant_id', colocate_with => 'integrator.intake_submissions');")),
    "every other tenant table co-located with the first",
  );
  const operating = fs.readFileSync(path.join(ROOT, "docs/operating.md"), "utf8");
  const listed = operating.match(/^ {3}select create_(reference|distributed)_table\(.*$/gm) ?? [];
  t.same(
    listed.map((line) => line.trim()),
    statements,
    "docs/operating.md lists these statements, in this order",
  );
});
