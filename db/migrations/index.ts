// The ordered list of migrations. knex records each by name in integrator.knex_migrations.
import type { Knex } from "knex";
import * as foundation from "./0001_foundation.ts";
import * as intake from "./0002_intake.ts";
import * as webhooks from "./0003_webhooks.ts";
import * as partners from "./0004_partners.ts";
import * as rateLimits from "./0005_rate_limits.ts";
import * as webhookOperations from "./0007_webhook_operations.ts";

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const migrations: [string, Migration][] = [
  ["0001_foundation", foundation],
  ["0002_intake", intake],
  ["0003_webhooks", webhooks],
  ["0004_partners", partners],
  ["0005_rate_limits", rateLimits],
  ["0007_webhook_operations", webhookOperations],
];

export const migrationSource: Knex.MigrationSource<[string, Migration]> = {
  getMigrations: async () => migrations,
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};
