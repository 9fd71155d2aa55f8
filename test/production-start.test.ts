// Starting with NODE_ENV=production: what must be configured, and what is warned about.
import { randomBytes } from "node:crypto";
import t from "tap";
import { createTestDatabase } from "./helpers/database.ts";
import { startMainProcess } from "./helpers/main-process.ts";

const productionEnv = async (t: Parameters<typeof createTestDatabase>[0]) => ({
  NODE_ENV: "production",
  DATABASE_URL: await createTestDatabase(t),
  ENCRYPTION_KEY: randomBytes(32).toString("hex"),
  PUBLIC_BASE_URL: "https://integrator.example.com",
  PORT: "0",
  LOG_LEVEL: "info",
});

t.test("in production, a start without TRUST_PROXY warns loudly that clients share the proxy's limits", async (t) => {
  const service = await startMainProcess(t, await productionEnv(t));
  const warning = service.logLines().find((line) => line.setting === "TRUST_PROXY");
  t.ok(warning, "a log line names TRUST_PROXY");
  t.equal(warning?.level, "warn", "at warn level");
  t.match(String(warning?.msg), /TRUST_PROXY is not set/);
});

t.test("in production, a start with TRUST_PROXY set does not warn", async (t) => {
  const service = await startMainProcess(t, { ...(await productionEnv(t)), TRUST_PROXY: "false" });
  t.notOk(
    service.logLines().find((line) => line.setting === "TRUST_PROXY"),
    "no warning",
  );
});
