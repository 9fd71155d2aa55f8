// One module parses every setting; a bad value stops the start with a message naming the variable.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import t from "tap";
import { HEAP_SHARE_FOR_BODIES, loadConfig } from "../../foundation/config.ts";
import { processEnv } from "../helpers/main-process.ts";

/** A fixed key that looks random (a SHA-256 digest) and whose base64 and base64url forms differ. */
const SAMPLE_KEY = "ad1c547f3610628dff55aebed55e6e022bf3858974144172e2229901d8bfe3de";

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

t.test("PUBLIC_BASE_URL defaults from PORT for links; the token issuer never depends on the port", async (t) => {
  t.equal(loadConfig({ PORT: "9090" }).publicBaseUrl, "http://localhost:9090");
  t.equal(loadConfig({ PORT: "9090" }).tokenIssuer, loadConfig({ PORT: "8080" }).tokenIssuer);
  t.equal(loadConfig({ PUBLIC_BASE_URL: "https://api.example.com/" }).tokenIssuer, "https://api.example.com");
});

t.test("PUBLIC_BASE_URL is required in production", async (t) => {
  t.throws(() => loadConfig({ NODE_ENV: "production", ENCRYPTION_KEY: SAMPLE_KEY }), {
    name: "ConfigError",
    message: /^PUBLIC_BASE_URL is required when NODE_ENV=production/,
  });
  t.equal(
    loadConfig({ NODE_ENV: "production", ENCRYPTION_KEY: SAMPLE_KEY, PUBLIC_BASE_URL: "https://a.example.com" })
      .tokenIssuer,
    "https://a.example.com",
  );
});

t.test("ENCRYPTION_KEY is parsed strictly as hex, base64 or base64url, and the encoding is reported", async (t) => {
  const key = Buffer.from(SAMPLE_KEY, "hex");
  const forms: [string, string][] = [
    [key.toString("hex"), "hex"],
    [key.toString("hex").toUpperCase(), "hex"],
    [key.toString("base64"), "base64"],
    [key.toString("base64").replace(/=$/, ""), "base64"],
    [key.toString("base64url"), "base64url"],
  ];
  t.ok(/[+/]/.test(key.toString("base64")) && /[-_]/.test(key.toString("base64url")), "the sample uses both alphabets");
  for (const [raw, encoding] of forms) {
    const config = loadConfig({ ENCRYPTION_KEY: raw });
    t.same(config.encryptionKey, key, `${raw} is the key`);
    t.equal(config.encryptionKeyEncoding, encoding, `${raw} was read as ${encoding}`);
  }
  const refused: [string, RegExp][] = [
    ["A".repeat(43), /^ENCRYPTION_KEY is all zero bytes/],
    ["0".repeat(64), /^ENCRYPTION_KEY is all zero bytes/],
    ["A".repeat(43) + "=", /^ENCRYPTION_KEY is all zero bytes/],
    [key.toString("base64").slice(0, 42) + "B", /^ENCRYPTION_KEY must be 32 bytes/], // non-canonical last character
    [key.toString("base64").slice(0, 40), /^ENCRYPTION_KEY must be 32 bytes/],
    [key.toString("hex").slice(0, 63), /^ENCRYPTION_KEY must be 32 bytes/],
    [key.toString("base64") + "AAAA", /^ENCRYPTION_KEY must be 32 bytes/],
    [`+${key.toString("base64url").slice(1)}`, /^ENCRYPTION_KEY must be 32 bytes/], // mixed alphabets
    ["not a key at all, not even close!!!!!!!!!!", /^ENCRYPTION_KEY must be 32 bytes/],
  ];
  for (const [raw, message] of refused) {
    t.throws(() => loadConfig({ ENCRYPTION_KEY: raw }), { name: "ConfigError", message }, raw);
  }
});

t.test("ENCRYPTION_KEY of one repeated byte or otherwise trivially low entropy is refused at start", async (t) => {
  const bytes = (values: number[]) => Buffer.from(values);
  const refused: [string, RegExp][] = [
    ["ab".repeat(32), /^ENCRYPTION_KEY is one byte \(0xab\) repeated: generate a random key/],
    ["a".repeat(64), /^ENCRYPTION_KEY is one byte \(0xaa\) repeated/],
    ["/".repeat(42) + "8", /^ENCRYPTION_KEY is one byte \(0xff\) repeated/],
    ["0123456789abcdef".repeat(4), /^ENCRYPTION_KEY has too little entropy/],
    [bytes(Array.from({ length: 32 }, (_, i) => i)).toString("hex"), /^ENCRYPTION_KEY has too little entropy/],
    [
      bytes(Array.from({ length: 32 }, (_, i) => 250 - i * 7)).toString("hex"),
      /^ENCRYPTION_KEY has too little entropy/,
    ],
    [Buffer.from("correct horse battery staple 123").toString("base64"), /^ENCRYPTION_KEY has too little entropy/],
  ];
  for (const [raw, message] of refused)
    t.throws(() => loadConfig({ ENCRYPTION_KEY: raw }), { name: "ConfigError", message }, raw);
  for (let i = 0; i < 200; i++) {
    const random = randomBytes(32).toString("hex");
    t.doesNotThrow(() => loadConfig({ ENCRYPTION_KEY: random }), `random key ${random}`);
  }
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
    [{ WEBHOOK_RETRY_SCHEDULE: "5 minutes" }, /^WEBHOOK_RETRY_SCHEDULE must list up to 24 waits such as 5m,2h,8h/],
    [{ WEBHOOK_RETRY_SCHEDULE: "8d" }, /^WEBHOOK_RETRY_SCHEDULE must list .* at most 7 days each/],
    [{ WEBHOOK_RETRY_SCHEDULE: ",," }, /^WEBHOOK_RETRY_SCHEDULE must list/],
    [{ WEBHOOK_RETRY_SCHEDULE: Array(25).fill("1m").join(",") }, /^WEBHOOK_RETRY_SCHEDULE must list up to 24/],
    [
      { WEBHOOK_RETRY_SCHEDULE: "1m", WEBHOOK_RETRY_BASE_SECONDS: "10" },
      /^Set WEBHOOK_RETRY_SCHEDULE or WEBHOOK_RETRY_BASE_SECONDS, not both/,
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" },
      /^OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http\(s\) URL/,
    ],
    [
      { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
      /^OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf or http\/json \(grpc/,
    ],
    [{ OTEL_TRACES_EXPORTER: "zipkin" }, /^OTEL_TRACES_EXPORTER must be otlp or none/],
    [{ OTEL_TRACES_SAMPLER: "sometimes" }, /^OTEL_TRACES_SAMPLER must be one of always_on/],
    [{ OTEL_TRACES_SAMPLER_ARG: "2" }, /^OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1/],
  ];
  for (const [env, message] of bad) {
    t.throws(() => loadConfig(env), { name: "ConfigError", message }, JSON.stringify(env));
  }
});

t.test("tracing is off unless an OTLP endpoint or OTEL_TRACES_EXPORTER=otlp turns it on", async (t) => {
  t.equal(loadConfig({}).tracing, undefined, "off by default");
  t.equal(loadConfig({ OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }).tracing, undefined);
  const endpoint = "http://collector.example:4318";
  t.match(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }).tracing, {
    protocol: "http/protobuf",
    serviceName: undefined,
    sampler: "parentbased_always_on",
    samplerRatio: 1,
    scheduleDelayMs: 5000,
    maxQueueSize: 2048,
  });
  t.ok(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces` }).tracing, "the traces endpoint");
  t.ok(loadConfig({ OTEL_TRACES_EXPORTER: "otlp" }).tracing, "OTEL_TRACES_EXPORTER=otlp alone");
  t.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: "true" }).tracing, undefined);
  t.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: "none" }).tracing, undefined);
  t.match(
    loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "integrator-eu",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
    }).tracing,
    { protocol: "http/json", serviceName: "integrator-eu", sampler: "parentbased_traceidratio", samplerRatio: 0.25 },
    "the traces protocol before the general one; service name and sampler as given",
  );
});

t.test("test-only delivery settings are refused in production", async (t) => {
  t.throws(
    () =>
      loadConfig({
        NODE_ENV: "production",
        ENCRYPTION_KEY: SAMPLE_KEY,
        PUBLIC_BASE_URL: "https://integrator.example.com",
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      }),
    { name: "ConfigError", message: /WEBHOOK_ALLOW_PRIVATE_TARGETS/ },
  );
});

t.test("operations settings: defaults and accepted forms", async (t) => {
  const config = loadConfig({});
  t.same(config.rateLimit, {
    perMinute: 600,
    anonPerMinute: 120,
    callbackPerMinute: 600,
    probePerMinute: 600,
    store: "memory",
  });
  t.same(config.http, {
    requestTimeoutMs: 30000,
    headersTimeoutMs: 10000,
    maxConnections: 1000,
    maxConnectionsPerAddress: 64,
    firstByteTimeoutMs: 3000,
  });
  t.equal(config.maxTokenLifetimeSeconds, 86400);
  t.same(config.hashing, { concurrency: 2, queueMax: 32 });
  t.same(config.login, { freeFailures: 5, backoffBaseSeconds: 1, backoffMaxSeconds: 900 });
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
  const main = path.join(import.meta.dirname, "..", "..", "app", "main.ts");
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const child = spawn(process.execPath, [main], {
        env: processEnv({ PORT: "eighty" }),
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

t.test(
  "LOAD_SHED_BODY_MEMORY_MB: by default a share of the heap limit; a given size; 0 for none; nothing else",
  async (t) => {
    const heapLimit = (await import("node:v8")).getHeapStatistics().heap_size_limit;
    t.equal(
      loadConfig({}).bodyMemoryBytes,
      Math.floor((Math.round(heapLimit / 2 ** 20) * 2 ** 20) / HEAP_SHARE_FOR_BODIES),
      "a share of this process's heap limit",
    );
    t.equal(loadConfig({ LOAD_SHED_BODY_MEMORY_MB: "64" }).bodyMemoryBytes, 64 * 2 ** 20);
    t.equal(loadConfig({ LOAD_SHED_BODY_MEMORY_MB: "0" }).bodyMemoryBytes, 0);
    for (const value of ["-1", "1.5", "lots"])
      t.throws(
        () => loadConfig({ LOAD_SHED_BODY_MEMORY_MB: value }),
        /LOAD_SHED_BODY_MEMORY_MB must be a whole number/,
      );
  },
);

t.test(
  "the retry window: MAX_DELIVERY_ATTEMPTS with the schedule, or WEBHOOK_RETRY_WINDOW, up to 3 days after the first attempt",
  async (t) => {
    const defaults = loadConfig({}).webhooks;
    t.equal(defaults.retryWindowSeconds, 2 * 3600 + 5 * 60, "by default 3 attempts over 2 h 5 min");

    // Svix's schedule (5s, 5m, 30m, 2h, 5h, 10h, 10h): 8 attempts over about 27½ hours.
    const svix = loadConfig({ WEBHOOK_RETRY_SCHEDULE: "5s,5m,30m,2h,5h,10h", WEBHOOK_RETRY_WINDOW: "28h" }).webhooks;
    t.equal(svix.maxAttempts, 8, "a window takes every retry the schedule places within it");
    t.equal(svix.retryWindowSeconds, 5 + 300 + 1800 + 7200 + 18000 + 36000 + 36000);
    // Stripe's 3 days with the default waits: 5m, 2h05m, 10h05m, 20h05m, … 70h05m; the next would be 80h05m.
    const stripe = loadConfig({ WEBHOOK_RETRY_WINDOW: "3d" }).webhooks;
    t.equal(stripe.maxAttempts, 10);
    t.equal(stripe.retryWindowSeconds, 70 * 3600 + 5 * 60);
    t.equal(loadConfig({ WEBHOOK_RETRY_WINDOW: "72h" }).webhooks.maxAttempts, 10, "hours as well as days");
    t.equal(loadConfig({ MAX_DELIVERY_ATTEMPTS: "10" }).webhooks.retryWindowSeconds, stripe.retryWindowSeconds);

    const refused: [Record<string, string>, RegExp][] = [
      [{ WEBHOOK_RETRY_WINDOW: "4d" }, /^WEBHOOK_RETRY_WINDOW must be a duration of at most 3 days .*, got "4d"$/],
      [{ WEBHOOK_RETRY_WINDOW: "73h" }, /^WEBHOOK_RETRY_WINDOW must be a duration of at most 3 days/],
      [{ WEBHOOK_RETRY_WINDOW: "0" }, /^WEBHOOK_RETRY_WINDOW must be a duration/],
      [{ WEBHOOK_RETRY_WINDOW: "a day" }, /^WEBHOOK_RETRY_WINDOW must be a duration/],
      [
        { WEBHOOK_RETRY_WINDOW: "1d", MAX_DELIVERY_ATTEMPTS: "5" },
        /^Set MAX_DELIVERY_ATTEMPTS or WEBHOOK_RETRY_WINDOW, not both/,
      ],
      [
        { MAX_DELIVERY_ATTEMPTS: "25" },
        /^MAX_DELIVERY_ATTEMPTS=25 with WEBHOOK_RETRY_SCHEDULE=5m,2h,8h,10h retries a delivery for 9d 4h 5m after its first attempt; the retry window is at most 3 days \(Stripe's\): set MAX_DELIVERY_ATTEMPTS to 10 or fewer/,
      ],
      [
        { MAX_DELIVERY_ATTEMPTS: "4", WEBHOOK_RETRY_SCHEDULE: "2d" },
        /^MAX_DELIVERY_ATTEMPTS=4 with WEBHOOK_RETRY_SCHEDULE=2d retries a delivery for 6d .*set MAX_DELIVERY_ATTEMPTS to 2 or fewer/,
      ],
      [
        { MAX_DELIVERY_ATTEMPTS: "25", WEBHOOK_RETRY_BASE_SECONDS: "60" },
        /^MAX_DELIVERY_ATTEMPTS=25 with WEBHOOK_RETRY_BASE_SECONDS=60 retries/,
      ],
      [
        { WEBHOOK_RETRY_WINDOW: "3d", WEBHOOK_RETRY_SCHEDULE: "5m" },
        /^WEBHOOK_RETRY_WINDOW=3d with WEBHOOK_RETRY_SCHEDULE=5m takes more than 24 retries to fill \(24 reach 2h\): lengthen the waits/,
      ],
      [
        { WEBHOOK_RETRY_WINDOW: "1m" },
        /^WEBHOOK_RETRY_WINDOW=1m ends before the first retry \(5m after the first attempt with WEBHOOK_RETRY_SCHEDULE=5m,2h,8h,10h\)/,
      ],
    ];
    for (const [env, message] of refused)
      t.throws(() => loadConfig(env), { name: "ConfigError", message }, JSON.stringify(env));
    t.equal(
      loadConfig({ MAX_DELIVERY_ATTEMPTS: "25", WEBHOOK_RETRY_SCHEDULE: "0s" }).webhooks.maxAttempts,
      25,
      "25 attempts at once are within the window",
    );
    t.equal(
      loadConfig({ WEBHOOK_RETRY_WINDOW: "2h", WEBHOOK_RETRY_SCHEDULE: "5m" }).webhooks.maxAttempts,
      25,
      "a window the 24 retries fill exactly",
    );
  },
);

t.test("a retry window over 3 days stops the start with what to change", async (t) => {
  const main = path.join(import.meta.dirname, "..", "..", "app", "main.ts");
  const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [main], {
      env: { PATH: process.env.PATH ?? "", MAX_DELIVERY_ATTEMPTS: "12" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
    child.once("error", reject);
    child.once("close", (exitCode) => resolve({ code: exitCode, stderr: err }));
  });
  t.equal(code, 1);
  t.match(
    stderr,
    /^Configuration error: MAX_DELIVERY_ATTEMPTS=12 with WEBHOOK_RETRY_SCHEDULE=5m,2h,8h,10h retries a delivery for 3d 18h 5m after its first attempt; the retry window is at most 3 days \(Stripe's\): set MAX_DELIVERY_ATTEMPTS to 10 or fewer, shorten the waits, or set WEBHOOK_RETRY_WINDOW instead$/m,
  );
});
