// Each test file gets a database of its own, cloned from the migrated template scripts/test.ts made.
import { randomBytes } from "node:crypto";
import { createDatabaseOnServer, dropDatabaseOnServer } from "../../db/database.ts";
import type { Test } from "tap";
import { withDatabase } from "../../scripts/throwaway-postgres.ts";

export function adminUrl(): string {
  const url = process.env.TEST_PG_ADMIN_URL;
  if (!url) throw new Error("Run the tests with npm test (it provides TEST_PG_ADMIN_URL and the template database)");
  return url;
}

export function databaseUrl(name: string): string {
  return withDatabase(adminUrl(), name);
}

/** Clones the template into a new database, dropped when the test ends. */
export async function createTestDatabase(t: Test): Promise<string> {
  const name = `t_${randomBytes(6).toString("hex")}`;
  const template = process.env.TEST_PG_TEMPLATE ?? "integrator_test_template";
  for (let attempt = 0; ; attempt++) {
    try {
      await createDatabaseOnServer(adminUrl(), name, template);
      break;
    } catch (error) {
      // Two clones of one template at the same instant can collide; the next try succeeds.
      if (attempt >= 20 || !/being accessed by other users/.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 + attempt * 50));
    }
  }
  t.teardown(() => dropDatabaseOnServer(adminUrl(), name));
  return databaseUrl(name);
}

/** A new empty database (no template, nothing migrated), dropped when the test ends. */
export async function createEmptyDatabase(t: Test): Promise<string> {
  const name = `t_${randomBytes(6).toString("hex")}`;
  await createDatabaseOnServer(adminUrl(), name);
  t.teardown(() => dropDatabaseOnServer(adminUrl(), name));
  return databaseUrl(name);
}
