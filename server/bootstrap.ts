// Shared start-up for the server, the worker, the admin CLI and the tests: find or start the
// database, migrate it, and build the services.
import fs from "node:fs";
import pg from "pg";
import type { Config } from "./config.ts";
import { createDatabase, migrate, startEmbeddedPostgres, type Database, type EmbeddedServer } from "../db/database.ts";
import { createSecretBox, loadEncryptionKey } from "./secrets.ts";
import { createTokenService } from "./auth/tokens.ts";
import type { Services } from "./services.ts";
import { createLogger, type Logger } from "./logger.ts";
import { migrateWorkerSchema } from "../worker/runner.ts";

export const VERSION: string = (
  JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;

export interface DatabaseHandle {
  url: string;
  db: Database;
  embedded: EmbeddedServer | undefined;
  close(): Promise<void>;
}

export async function openDatabase(
  config: Config,
  options: { applicationName?: string; onLog?: (line: string) => void } = {},
): Promise<DatabaseHandle> {
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: config.dataDir,
        port: config.embeddedPgPort,
        ...(options.onLog ? { onLog: options.onLog } : {}),
      });
  const url = config.databaseUrl ?? (embedded as EmbeddedServer).url;
  const db = createDatabase(url, config.dbPoolMax, options.applicationName);
  return {
    url,
    db,
    embedded,
    async close() {
      await db.destroy();
      await embedded?.stop();
    },
  };
}

/** Applies the service's migrations and graphile-worker's schema; safe to run from many processes at once. */
export async function migrateAll(db: Database, url: string): Promise<void> {
  // One process migrates at a time (a session lock on a connection of its own); the others wait, then find nothing to do.
  const lock = new pg.Client({ connectionString: url, application_name: "integrator-migrate-lock" });
  await lock.connect();
  try {
    await lock.query("select pg_advisory_lock(hashtext('integrator.migrations'))");
    await migrate(db);
    await migrateWorkerSchema(url);
  } finally {
    await lock.end();
  }
}

export async function buildServices(
  config: Config,
  db: Database,
  logger: Logger = createLogger({ level: config.logLevel }),
): Promise<Services> {
  const box = createSecretBox(loadEncryptionKey(config.encryptionKey, config.dataDir));
  const tokens = await createTokenService(db, box, config);
  return { config, db, box, tokens, version: VERSION, logger };
}
