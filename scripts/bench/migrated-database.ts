// A throwaway PostgreSQL with one migrated database and a plain pg client on it, for the scripts
// that time statements one by one (explain-write, emit-parts). `close()` ends all of it.
import pg from "pg";
import { createDatabase, createDatabaseOnServer, dropDatabaseOnServer } from "../../db/database.ts";
import { migrateAll } from "../../app/services.ts";
import { throwawayPostgres, withDatabase } from "../throwaway-postgres.ts";

export interface MigratedDatabase {
  client: pg.Client;
  /** The database's URL, for a pool of one's own (createDatabase). */
  url: string;
  close: () => Promise<void>;
}

export async function migratedDatabase(name: string): Promise<MigratedDatabase> {
  const postgres = await throwawayPostgres(`integrator-${name}`);
  await dropDatabaseOnServer(postgres.adminUrl, name);
  await createDatabaseOnServer(postgres.adminUrl, name);
  const url = withDatabase(postgres.adminUrl, name);
  const db = createDatabase(url, 2);
  await migrateAll(db, url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    client,
    url,
    close: async () => {
      await client.end();
      await db.destroy();
      await postgres.stop();
    },
  };
}
