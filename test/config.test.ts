// One module parses every setting; a bad value stops the start with a message naming the variable.
import t from "tap";
import { ConfigError, loadConfig } from "../src/config.ts";

t.test("defaults apply when nothing is set", async (t) => {
  const config = loadConfig({});
  t.equal(config.port, 8080);
  t.equal(config.publicBaseUrl, "http://localhost:8080");
  t.equal(config.idempotencyTtlHours, 24);
  t.equal(config.webhooks.maxAttempts, 3);
  t.equal(config.accessTokenTtlSeconds, 900);
  t.equal(config.databaseUrl, undefined);
  t.equal(config.validateResponses, false);
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
  ];
  for (const [env, message] of bad) {
    t.throws(() => loadConfig(env), { name: "ConfigError", message }, JSON.stringify(env));
  }
});

t.test("test-only delivery settings are refused in production", async (t) => {
  t.throws(() => loadConfig({ NODE_ENV: "production", ENCRYPTION_KEY: "a".repeat(64), WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" }), ConfigError);
});
