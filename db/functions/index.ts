// The text that runs today of every function (trigger functions included) and view in the integrator
// schema, one file each beside this module, applied after the versioned migrations by migrate()
// (db/database.ts) on every start: Flyway's repeatable migrations. The migrations are frozen history and
// may create older versions; this step replaces them. docs/architecture.md, "Where SQL lives".
//
// A file is applied when its text differs from the text last applied, or when the versioned migrations
// have changed since (any migration applied or rolled back: it may have created, replaced or dropped an
// object of a file), so a rollback is never mistaken for the current state.
import { createHash } from "node:crypto";
import fs from "node:fs";
import type { Knex } from "knex";
import type pg from "pg";

/**
 * Every file, in the order applied: an object comes after what its definition needs when it is created
 * (a SQL function's body and a view are checked against the tables and functions they name then; a
 * plpgsql body only when it first runs). A new file is added here; a file of the folder missing here, or
 * a name here without its file, stops migrate().
 */
export const FUNCTION_FILES: readonly string[] = [
  "uuid_v7",
  "webhook_event_data_problem",
  "delivery_backlog",
  "queue_delivery_jobs",
  "emit_event",
  "emit_operational_event",
  "count_inserted_webhook_deliveries",
  "count_deleted_webhook_deliveries",
  "submit_intake",
  "claim_idempotency_key",
  "remember_idempotent_response",
  "record_submission",
  "record_submission_once",
  "record_routing_decision",
  "record_routing_decision_once",
  "pace_delivery",
  "reset_delivery_pacing",
  "deliveries_to_attempt",
  "delivery_to_attempt",
  "record_delivery_attempt",
  "record_delivery_attempts",
];

const FOLDER = new URL("./", import.meta.url);

/** What was last applied of each file: its text's checksum, and the versioned migrations in place then. */
const APPLIED_TABLE = `
  create table if not exists integrator.applied_functions (
    name text primary key,
    checksum text not null,
    migrations text not null,
    applied_at timestamptz not null default now()
  )`;

/** The versioned migrations in place: changes with every migration applied or rolled back. */
const MIGRATIONS_STATE =
  "select md5(coalesce(string_agg(id::text || ' ' || name, ',' order by id), '')) as state from integrator.knex_migrations";

export interface FunctionFile {
  name: string;
  text: string;
  checksum: string;
}

/** The files in their order, read from the folder; refuses a folder and a list that disagree. */
export function functionFiles(): FunctionFile[] {
  const present = fs
    .readdirSync(FOLDER)
    .filter((file) => file.endsWith(".sql"))
    .map((file) => file.slice(0, -".sql".length));
  const unlisted = present.filter((name) => !FUNCTION_FILES.includes(name));
  const missing = FUNCTION_FILES.filter((name) => !present.includes(name));
  if (unlisted.length > 0 || missing.length > 0)
    throw new Error(
      `db/functions/: ${[
        ...unlisted.map((name) => `${name}.sql is not in FUNCTION_FILES`),
        ...missing.map((name) => `${name}.sql is listed but missing`),
      ].join("; ")}`,
    );
  return FUNCTION_FILES.map((name) => {
    const text = fs.readFileSync(new URL(`${name}.sql`, FOLDER), "utf8");
    return { name, text, checksum: createHash("sha256").update(text).digest("hex") };
  });
}

/** What this module uses of knex's client: a pooled pg connection out and back. */
interface ConnectionSource {
  acquireConnection(): Promise<pg.ClientBase>;
  releaseConnection(connection: pg.ClientBase): Promise<void>;
}

/**
 * Applies, in one transaction, every file whose text or whose migrations differ from what was last
 * applied, and returns their names. Runs after the versioned migrations (knex_migrations must exist).
 * Each text goes to PostgreSQL as written, with no placeholders: knex would read a `?` in it as one.
 */
export async function applyFunctions(db: Knex): Promise<string[]> {
  const files = functionFiles();
  const source = db.client as ConnectionSource;
  const connection = await source.acquireConnection();
  try {
    await connection.query("begin");
    try {
      // One applier at a time even outside the migration lock (a test's migrate(), say).
      await connection.query("select pg_advisory_xact_lock(hashtext('integrator.applied_functions'))");
      await connection.query(APPLIED_TABLE);
      const migrations = (await connection.query<{ state: string }>(MIGRATIONS_STATE)).rows[0]?.state ?? "";
      const { rows } = await connection.query<{ name: string; checksum: string; migrations: string }>(
        "select name, checksum, migrations from integrator.applied_functions",
      );
      const last = new Map(rows.map((row) => [row.name, row]));
      const applied: string[] = [];
      for (const file of files) {
        const previous = last.get(file.name);
        if (previous?.checksum === file.checksum && previous.migrations === migrations) continue;
        await connection.query(file.text).catch((error: unknown) => {
          throw new Error(`db/functions/${file.name}.sql: ${error instanceof Error ? error.message : String(error)}`, {
            cause: error,
          });
        });
        await connection.query(
          `insert into integrator.applied_functions (name, checksum, migrations) values ($1, $2, $3)
           on conflict (name) do update set checksum = excluded.checksum, migrations = excluded.migrations,
                                            applied_at = now()`,
          [file.name, file.checksum, migrations],
        );
        applied.push(file.name);
      }
      // A file that is gone leaves its object to the migration that drops it, and its row to no one.
      await connection.query("delete from integrator.applied_functions where not (name = any ($1::text[]))", [
        files.map((file) => file.name),
      ]);
      await connection.query("commit");
      return applied;
    } catch (error) {
      await connection.query("rollback").catch(() => undefined);
      throw error;
    }
  } finally {
    await source.releaseConnection(connection);
  }
}
