// What every process of the service does before its role, and all the admin CLI does: open (or start) the
// database, migrate it, and build the services the handlers, the worker and the CLI's commands work with.
// Nothing here loads the HTTP pipeline or the job runner, so a CLI command starts without them.
import {
  createDatabase,
  migrate,
  startEmbeddedPostgres,
  withMigrationLock,
  type Database,
  type DatabaseLog,
  type EmbeddedServer,
} from "../db/database.ts";
import { createSecretBox, loadEncryptionKey } from "../foundation/secrets.ts";
import { createTokenService } from "../foundation/auth/tokens.ts";
import { createHashGate } from "../foundation/auth/passwords.ts";
import { ReplayMemory } from "../foundation/replay-memory.ts";
import { ListenWakeUps } from "../foundation/listen-wake-ups.ts";
import { createLogger, type Logger } from "../foundation/logger.ts";
import { migrateWorkerSchema } from "../worker/schema.ts";
import type { Config } from "../foundation/config.ts";
import type { Services } from "../foundation/services.ts";
import { VERSION } from "../foundation/version.ts";

export interface DatabaseHandle {
  url: string;
  db: Database;
  embedded: EmbeddedServer | undefined;
  close(): Promise<void>;
}

export async function openDatabase(
  config: Config,
  options: { applicationName?: string; onLog?: (line: string) => void; log?: DatabaseLog } = {},
): Promise<DatabaseHandle> {
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: config.dataDir,
        port: config.embeddedPgPort,
        ...(options.onLog ? { onLog: options.onLog } : {}),
      });
  const url = config.databaseUrl ?? (embedded as EmbeddedServer).url;
  const db = createDatabase(url, config.dbPoolMax, options.applicationName, options.log);
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

/**
 * Applies the service's migrations and function files (db/functions/), then graphile-worker's schema; safe
 * to run from many processes at once.
 */
export async function migrateAll(db: Database, url: string): Promise<void> {
  await withMigrationLock(url, async () => {
    await migrate(db);
    await migrateWorkerSchema(url);
  });
}

export async function buildServices(
  config: Config,
  db: Database,
  logger: Logger = createLogger({ level: config.logLevel }),
): Promise<Services> {
  const key = loadEncryptionKey(config.encryptionKey, config.dataDir);
  // Which encoding was read tells an operator a key was understood as intended; the key is never logged.
  logger.info(
    config.encryptionKey
      ? { key_source: "ENCRYPTION_KEY", key_encoding: config.encryptionKeyEncoding }
      : { key_source: "DATA_DIR", key_encoding: "hex" },
    "encryption key loaded",
  );
  const secretBox = createSecretBox(key);
  const tokens = await createTokenService(db, secretBox, config, logger);
  const hashGate = createHashGate(config.hashing);
  const replays = new ReplayMemory(config.idempotencyMemoryBytes);
  return {
    config,
    db,
    secretBox,
    tokens,
    hashGate,
    replays,
    listenWakeUps: new ListenWakeUps(),
    version: VERSION,
    logger,
  };
}
