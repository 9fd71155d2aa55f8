// Starting with NODE_ENV=production: what must be configured, and what is warned about.
import { randomBytes } from "node:crypto";
import t from "tap";
import { createTestDatabase } from "../helpers/database.ts";
import { runMainToExit, startMainProcess } from "../helpers/main-process.ts";

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

// One start serves the cases that read its start-up log.
t.test("in production, a start with TRUST_PROXY set and a base64url ENCRYPTION_KEY", async (t) => {
  // A key whose text uses the URL-safe characters (one without them reads the same as base64, and is logged so).
  let key = randomBytes(32).toString("base64url");
  while (!/[-_]/.test(key)) key = randomBytes(32).toString("base64url");
  const service = await startMainProcess(t, { ...(await productionEnv(t)), ENCRYPTION_KEY: key, TRUST_PROXY: "false" });

  await t.test("does not warn about TRUST_PROXY", async (t) => {
    t.notOk(
      service.logLines().find((line) => line.setting === "TRUST_PROXY"),
      "no warning",
    );
  });

  await t.test("says in its start-up log which encoding ENCRYPTION_KEY was read in, never the key", async (t) => {
    const line = service.logLines().find((entry) => entry.msg === "encryption key loaded");
    t.equal(line?.key_source, "ENCRYPTION_KEY");
    t.equal(line?.key_encoding, "base64url");
    t.notOk(service.stdout().includes(key), "the key itself is not in the log");
  });
});

t.test("in production, an all-zero ENCRYPTION_KEY (43 A's) stops the start naming the variable", async (t) => {
  const env = { ...(await productionEnv(t)), ENCRYPTION_KEY: "A".repeat(43) };
  const { code, stderr } = await runMainToExit(env);
  t.equal(code, 1);
  t.match(stderr, /^Configuration error: ENCRYPTION_KEY is all zero bytes/m);
});

t.test("an ENCRYPTION_KEY of one repeated byte stops the start with a clear message", async (t) => {
  const env = { ...(await productionEnv(t)), ENCRYPTION_KEY: "ab".repeat(32) };
  const { code, stderr } = await runMainToExit(env);
  t.equal(code, 1);
  t.match(stderr, /^Configuration error: ENCRYPTION_KEY is one byte \(0xab\) repeated: generate a random key/m);
});

t.test("in production, a start without PUBLIC_BASE_URL stops naming the variable", async (t) => {
  const { PUBLIC_BASE_URL: _omitted, ...env } = await productionEnv(t);
  const { code, stderr } = await runMainToExit(env);
  t.equal(code, 1);
  t.match(stderr, /^Configuration error: PUBLIC_BASE_URL is required when NODE_ENV=production/m);
});
