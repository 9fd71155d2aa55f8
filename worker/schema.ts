// graphile-worker's own schema (graphile_worker): every role and the admin CLI apply it at start, like the
// service's migrations, without loading the job runner.
import { Logger as GraphileLogger, runMigrations } from "graphile-worker";

export async function migrateWorkerSchema(connectionString: string): Promise<void> {
  await runMigrations({ connectionString, logger: new GraphileLogger(() => () => undefined) });
}
