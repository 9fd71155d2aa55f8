// One module parses every setting; a bad value stops the start with a message naming the variable.
import { spawn } from "node:child_process";
import path from "node:path";
import t from "tap";
import { ConfigError, loadConfig } from "../server/config.ts";

t.test("defaults apply when nothing is set", async (t) => {
  const config = loadConfig({});
  t.equal(config.port, 8080);
  t.equal(config.publicBaseUrl, "http://localhost:8080");
  t.equal(config.idempotencyTtlHours, 24);
  t.equal(config.webhooks.maxAttempts, 3);
  t.equal(config.accessTokenTtlSeconds, 900);
  t.equal(config.databaseUrl, undefined);
  t.equal(config.validateResponses, false);
  t.equal(
    config.metricsHost,
    "127.0.0.1",
    "the unauthenticated /metrics server stays on loopback unless told otherwise",
  );
});

t.test("PUBLIC_BASE_URL defaults from PORT", async (t) => {
  t.equal(loadConfig({ PORT: "9090" }).publicBaseUrl, "http://localhost:9090");
});

t.test("a bad value names the variable and what it expects", async (t) => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ PORT: "eighty" }, /^PORT must be a whole number/],
    [{ PORT: "70000" }, /^PORT must be a whole number from 0 to 65535/],
    [{ DATABASE_URL: "mysql://x" }, /^DATABASE_URL must be a postgres:\/\//],
    [{ ENCRYPTION_KEY: "short" }, /^ENCRYPTION_KEY must be 32 bytes/],
    [{ WEBHOOK_ALLOW_PRIVATE_TARGETS: "maybe" }, /^WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false/],
    [{ AUTH_JWKS_URL: "https://idp.example.com/jwks" }, /^AUTH_ISSUER is required/],
    [{ NODE_ENV: "production" }, /^ENCRYPTION_KEY is required/],
    [{ LOG_LEVEL: "loud" }, /^LOG_LEVEL must be one of/],
    [{ WEBHOOK_RESOLVE: "hooks.example.com" }, /^WEBHOOK_RESOLVE must look like host=ip/],
    [{ RATE_LIMIT_PER_MINUTE: "0" }, /^RATE_LIMIT_PER_MINUTE must be a whole number from 1/],
    [{ RATE_LIMIT_STORE: "redis" }, /^RATE_LIMIT_STORE must be memory or postgres/],
    [{ TRUST_PROXY: "the-proxy" }, /^TRUST_PROXY must be false, a hop count/],
    [{ TRUST_PROXY: "10.0.0.0/33" }, /^TRUST_PROXY must be false, a hop count/],
    [{ LOAD_SHED_EVENT_LOOP_DELAY_MS: "-5" }, /^LOAD_SHED_EVENT_LOOP_DELAY_MS must be a whole number from 0/],
    [{ METRICS_PORT: "99999" }, /^METRICS_PORT must be a whole number from 0 to 65535/],
    [{ SHUTDOWN_TIMEOUT_MS: "soon" }, /^SHUTDOWN_TIMEOUT_MS must be a whole number/],
  ];
  for (const [env, message] of bad) {
    t.throws(() => loadConfig(env), { name: "ConfigError", message }, JSON.stringify(env));
  }
});

t.test("test-only delivery settings are refused in production", async (t) => {
  t.throws(
    () => loadConfig({ NODE_ENV: "production", ENCRYPTION_KEY: "a".repeat(64), WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" }),
    ConfigError,
  );
});

t.test("operations settings: defaults and accepted forms", async (t) => {
  const config = loadConfig({});
  t.same(config.rateLimit, { perMinute: 600, anonPerMinute: 120, probePerMinute: 600, store: "memory" });
  t.same(config.loadShedding, { eventLoopDelayMs: 500, dbPendingAcquires: 50 });
  t.equal(config.metricsPort, 0, "metrics disabled unless METRICS_PORT is set");
  t.equal(config.shutdownTimeoutMs, 25000);
  t.equal(config.trustProxy, false);
  t.equal(loadConfig({ TRUST_PROXY: "2" }).trustProxy, 2);
  t.same(loadConfig({ TRUST_PROXY: "loopback, 10.0.0.0/8, fd00::/8" }).trustProxy, [
    "loopback",
    "10.0.0.0/8",
    "fd00::/8",
  ]);
  t.equal(loadConfig({ RATE_LIMIT_STORE: "postgres" }).rateLimit.store, "postgres");
});

t.test("the service refuses to start with a bad setting: exit code 1 and a message naming the variable", async (t) => {
  const main = path.join(import.meta.dirname, "..", "server", "main.ts");
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const child = spawn(process.execPath, [main], {
        env: { PATH: process.env.PATH ?? "", PORT: "eighty" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
      child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
      child.once("error", reject);
      child.once("close", (exitCode) => resolve({ code: exitCode, stdout: out, stderr: err }));
    },
  );
  t.equal(code, 1);
  t.match(stderr, /^Configuration error: PORT must be a whole number from 0 to 65535, got "eighty"$/m);
  t.equal(stdout, "", "nothing started, nothing logged");
});
