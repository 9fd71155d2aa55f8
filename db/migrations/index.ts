// The ordered list of migrations. knex records each by name in integrator.knex_migrations.
import type { Knex } from "knex";
import * as foundation from "./0001_foundation.ts";
import * as webhooks from "./0003_webhooks.ts";

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

// 0002 is reserved for intake.
const migrations: [string, Migration][] = [
  ["0001_foundation", foundation],
  ["0003_webhooks", webhooks],
];

export const migrationSource: Knex.MigrationSource<[string, Migration]> = {
  getMigrations: async () => migrations,
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};
