// OpenTelemetry tracing across the API and the worker, as real separate processes exporting to a local
// OTLP/HTTP receiver (JSON encoding): one trace from POST /v1/intake/submit through the emitting
// statement, the job, the delivery attempt's HTTPS request and the recorded outcome, with the ids as
// attributes and no secret anywhere. And with no OTEL_ settings (or OTEL_SDK_DISABLED), no OpenTelemetry
// module is loaded and nothing is exported.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import t, { type Test } from "tap";
import { createDatabase } from "../../db/database.ts";
import { createTenant } from "../../db/principals.ts";
import { registerUser } from "../../handlers/auth/principals.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startReceiver } from "../helpers/https-receiver.ts";
import { startMainProcess } from "../helpers/main-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitFor } from "../helpers/wait.ts";
import { testCa, webhookEnv } from "../helpers/webhooks.ts";

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: { key: string; value: OtlpValue }[];
}
/** A span as exported, with its process's service.name and its attributes as plain values. */
interface ExportedSpan extends OtlpSpan {
  service: string;
  values: Record<string, string | number | boolean | undefined>;
}

const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };

const plain = (value: OtlpValue) =>
  value.stringValue ??
  (value.intValue === undefined ? undefined : Number(value.intValue)) ??
  value.boolValue ??
  value.doubleValue;

/** A plain OTLP/HTTP receiver: POST /v1/traces with the JSON encoding; every span kept. */
async function startOtlpReceiver(t: Test) {
  const spans: ExportedSpan[] = [];
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      bodies.push(body);
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const request = JSON.parse(body) as {
        resourceSpans?: {
          resource?: { attributes?: { key: string; value: OtlpValue }[] };
          scopeSpans?: { spans?: OtlpSpan[] }[];
        }[];
      };
      for (const resourceSpans of request.resourceSpans ?? []) {
        const service = String(
          plain(resourceSpans.resource?.attributes?.find((entry) => entry.key === "service.name")?.value ?? {}),
        );
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            spans.push({
              ...span,
              service,
              values: Object.fromEntries((span.attributes ?? []).map((entry) => [entry.key, plain(entry.value)])),
            });
      }
      res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}/v1/traces`, spans, bodies };
}

t.test(
  "one trace joins the submit, the emitting statement, the job, the attempt and its outcome across the API and the worker",
  async (t) => {
    const databaseUrl = await createTestDatabase(t);
    const db = createDatabase(databaseUrl, 2);
    t.teardown(() => db.destroy());
    const tenant = await createTenant(db, "Tracing tenant");
    const password = randomBytes(12).toString("base64url");
    await registerUser(db, { tenantId: tenant.id, username: "tracing-user", password, roles: ["client_admin"] });

    const otlp = await startOtlpReceiver(t);
    const ca = testCa(t);
    const PATH = "/traced?sig=kept-out";
    const receiver = await startReceiver(ca, (_request, count) => ({ status: count === 1 ? 503 : 204 }));
    t.teardown(() => receiver.close());
    const env = {
      NODE_ENV: "test",
      DATABASE_URL: databaseUrl,
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      PORT: "0",
      LOG_LEVEL: "info",
      ...webhookEnv(ca),
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    };
    const api = await startMainProcess(t, { ...env, DATA_DIR: tempDir(t, "integrator-tracing-api-") });
    const worker = await startMainProcess(
      t,
      { ...env, DATA_DIR: tempDir(t, "integrator-tracing-worker-") },
      { args: ["--role=worker"] },
    );
    const base = `http://127.0.0.1:${api.port}`;

    const tokenResponse = await fetch(`${base}/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "password", username: "tracing-user", password }).toString(),
    });
    t.equal(tokenResponse.status, 200, "a token");
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    const authorized = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const subscribed = await fetch(`${base}/v1/webhooks/subscriptions`, {
      method: "POST",
      headers: authorized,
      body: JSON.stringify({ url: receiver.url(PATH), events: ["intake.submitted"] }),
    });
    t.equal(subscribed.status, 201, "a subscription");
    const subscription = (await subscribed.json()) as { id: string; secret: string };

    const submit = async (headers: Record<string, string> = {}) => {
      const submitted = await fetch(`${base}/v1/intake/submit`, {
        method: "POST",
        headers: { ...authorized, ...headers },
        body: JSON.stringify({ filename: "traced.pdf", file_size: 1234, mime_type: "application/pdf" }),
      });
      t.equal(submitted.status, 201, "a submission");
      return (await submitted.json()) as { id: string };
    };
    const isStatement = (name: string) => (span: ExportedSpan) =>
      span.kind === KIND.client && String(span.values["db.query.text"]).includes(`integrator.${name}(`);
    // Spans come in batches as they end; the last of a delivery's is its recorded outcome.
    const isOutcome = (span: ExportedSpan) =>
      span.service === "integrator-worker" && String(span.values["db.query.text"]).includes("record_delivery_attempt");
    const sentAndRecorded = async (requests: number) => {
      await waitFor(
        async () => receiver.receivedAt(PATH).length,
        (count) => count >= requests,
        { seconds: 30 },
      );
      await waitFor(
        async () => otlp.spans.filter(isOutcome).length,
        (count) => count >= requests,
        { seconds: 30 },
      );
    };
    // The first submission's delivery fails once (503) and is retried at once (WEBHOOK_RETRY_SCHEDULE=0s);
    // the second is sent with an Idempotency-Key (the keyed statement).
    const submission = await submit();
    await sentAndRecorded(2);
    const keyed = await submit({ "Idempotency-Key": "traced-keyed-submit" });
    await sentAndRecorded(3);
    // Each process exports on its own schedule: on a busy machine the worker's spans of the keyed delivery
    // can arrive before the API's of the keyed request.
    await waitFor(
      async () => otlp.spans.filter(isStatement("record_submission_once")).length,
      (count) => count >= 1,
      { seconds: 30 },
    );
    const deliveryOf = async (submissionId: string) => {
      const rows: { id: string }[] = await db("integrator.webhook_deliveries")
        .where({ tenant_id: tenant.id, subscription_id: subscription.id })
        .whereRaw("payload->'data'->>'submission_id' = ?", [submissionId])
        .select("id");
      const [delivery] = rows;
      t.ok(delivery, "the submission's delivery");
      return delivery?.id ?? "";
    };
    const deliveryId = await deliveryOf(submission.id);
    const keyedDeliveryId = await deliveryOf(keyed.id);

    const spans = otlp.spans;
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const ancestors = (span: ExportedSpan): ExportedSpan[] => {
      const chain: ExportedSpan[] = [];
      for (let parent = byId.get(span.parentSpanId ?? ""); parent; parent = byId.get(parent.parentSpanId ?? ""))
        chain.push(parent);
      return chain;
    };
    const all = (test: (span: ExportedSpan) => boolean, among = spans) => among.filter(test);
    const one = (what: string, test: (span: ExportedSpan) => boolean, among = spans): ExportedSpan => {
      const found = all(test, among);
      t.equal(found.length, 1, `one ${what} span`);
      if (!found[0])
        throw new Error(`no ${what} span among ${among.map((span) => `${span.service} ${span.name}`).join(", ")}`);
      return found[0];
    };
    // The unkeyed submission's trace.
    const statement = one("emitting statement", isStatement("record_submission"));
    const trace = all((span) => span.traceId === statement.traceId);
    const server = one(
      "server",
      (span) => span.kind === KIND.server && span.values["http.route"] === "/v1/intake/submit",
      trace,
    );
    t.equal(server.service, "integrator-api", "the API's spans name their role's service");
    t.equal(server.name, "POST /v1/intake/submit", "the server span is named by method and route");
    t.match(
      server.values,
      {
        "http.request.method": "POST",
        "http.response.status_code": 201,
        "integrator.operation_id": "submitIntake",
        "integrator.tenant_id": tenant.id,
      },
      "the server span's attributes",
    );
    t.same(
      trace
        .filter((span) => span.service === "integrator-api" && span.name.startsWith("middleware - "))
        .map((span) => span.name),
      ["middleware - requestPipeline"],
      "express makes one middleware span for the request's steps (http/pipeline.ts)",
    );
    const emit = one("emitting", (span) => span.kind === KIND.producer, trace);
    t.equal(emit.name, "emit intake.submitted");
    t.ok(ancestors(emit).includes(server), "the emitting span is inside the request's server span");
    t.equal(emit.values["integrator.tenant_id"], tenant.id);
    t.equal(statement.parentSpanId, emit.spanId, "the statement's pg span is the emitting span's child");
    t.notMatch(String(statement.values["db.query.text"]), submission.id, "the SQL text carries no bound values");

    const jobs = all((span) => span.kind === KIND.consumer && span.name === "process deliver_webhook", trace);
    t.equal(jobs.length, 2, "two jobs in the trace: the first attempt's and the retry's");
    const job = one("first job", (span) => span.parentSpanId === emit.spanId, jobs);
    t.equal(job.service, "integrator-worker", "the worker's spans name their role's service");
    t.match(job.values, { "integrator.tenant_id": tenant.id, "integrator.delivery_id": deliveryId });

    const attemptSpans = (handled: ExportedSpan, number: number, status: number) => {
      t.match(
        handled.values,
        {
          "integrator.tenant_id": tenant.id,
          "integrator.delivery_id": deliveryId,
          "integrator.subscription_id": subscription.id,
          "integrator.attempt": number,
        },
        `attempt ${number}: the delivery span's ids`,
      );
      const attempt = one(
        "attempt",
        (span) => span.kind === KIND.client && span.parentSpanId === handled.spanId && span.name === "POST",
      );
      t.match(
        attempt.values,
        {
          "http.request.method": "POST",
          "http.response.status_code": status,
          "server.address": "hooks.test.example",
          "server.port": receiver.port,
          "integrator.subscription_id": subscription.id,
          "integrator.delivery_id": deliveryId,
          "integrator.attempt": number,
        },
        `attempt ${number}: the HTTPS request is the delivery span's child`,
      );
      const outcome = one("outcome", (span) => isOutcome(span) && span.parentSpanId === handled.spanId);
      // After the request began; the HTTP span itself may end a moment after the answer was read (its
      // instrumentation closes it on the response's close), so the two may overlap by that moment.
      t.ok(
        BigInt(outcome.startTimeUnixNano) >= BigInt(attempt.startTimeUnixNano),
        `attempt ${number}: its outcome is recorded after it began, as the delivery span's child`,
      );
      return [attempt, outcome];
    };
    const first = one("first delivery", (span) => span.name === "deliver webhook" && span.parentSpanId === job.spanId);
    const [failedAttempt] = attemptSpans(first, 1, 503);
    t.equal(failedAttempt?.values["error.type"], "http_status", "a failed attempt's span names its class");
    const retry = one("retry job", (span) => span.parentSpanId === first.spanId, jobs);
    t.ok(retry, "the retry's job is a child of the first attempt's delivery span (the recorded outcome queued it)");
    const second = one(
      "second delivery",
      (span) => span.name === "deliver webhook" && span.parentSpanId === retry.spanId,
    );
    attemptSpans(second, 2, 204);

    // The keyed submission: its statement (record_submission_once) emits too, and its job continues its trace.
    const keyedStatement = one("keyed emitting statement", isStatement("record_submission_once"));
    const keyedTrace = all((span) => span.traceId === keyedStatement.traceId);
    t.not(keyedStatement.traceId, statement.traceId, "another request, another trace");
    const keyedEmit = one("keyed emitting", (span) => span.kind === KIND.producer, keyedTrace);
    t.equal(keyedStatement.parentSpanId, keyedEmit.spanId, "the keyed statement is its emitting span's child");
    const keyedJob = one("keyed job", (span) => span.kind === KIND.consumer, keyedTrace);
    t.equal(keyedJob.parentSpanId, keyedEmit.spanId, "its job is the emitting span's child");
    t.equal(keyedJob.values["integrator.delivery_id"], keyedDeliveryId);

    // Nothing exported names a secret: not the bearer token, the webhook secret, the password, the
    // subscription URL's query or the payload.
    const exported = otlp.bodies.join("\n");
    for (const [secret, what] of [
      [token, "the bearer token"],
      [subscription.secret, "the webhook secret"],
      [password, "the password"],
      ["kept-out", "the subscription URL's query"],
      ["traced.pdf", "the submission's payload"],
    ] as const)
      t.notOk(exported.includes(secret), `no span holds ${what}`);
    const signature = String(receiver.receivedAt(PATH)[0]?.headers["webhook-signature"] ?? "");
    t.ok(signature.length > 10 && !exported.includes(signature.split(",")[1] ?? signature), "nor the signature");
    t.notOk(receiver.receivedAt(PATH)[0]?.headers.traceparent, "receivers get no traceparent header");

    api.child.kill("SIGTERM");
    worker.child.kill("SIGTERM");
    t.match(await api.exited, { code: 0 }, "the API stops cleanly with tracing on");
    t.match(await worker.exited, { code: 0 }, "the worker stops cleanly with tracing on");
  },
);

// A preload that records, at exit, every module loaded of OpenTelemetry's SDK, exporters and
// instrumentations and of import-in-the-middle (the API alone, @opentelemetry/api, is loaded by
// prom-client whatever the settings, and does nothing until an SDK registers), and which of the API's
// globals (tracer provider, context manager, propagator) were registered.
const LOADED_MODULES_PRELOAD = `
import { registerHooks } from "node:module";
import fs from "node:fs";
const seen = new Set();
registerHooks({
  load(url, context, nextLoad) {
    if (/@opentelemetry\\/(?!api\\/)|import-in-the-middle/.test(url)) seen.add(url);
    return nextLoad(url, context);
  },
});
process.on("exit", () => {
  const registered = Object.keys(globalThis[Symbol.for("opentelemetry.js.api.1")] ?? {}).filter((key) => key !== "version");
  fs.writeFileSync(process.env.LOADED_MODULES_FILE, JSON.stringify({ modules: [...seen], registered }));
});
`;

t.test(
  "no span holds a credential or signature from a query string: url.query is masked exactly as the request log masks it",
  async (t) => {
    const databaseUrl = await createTestDatabase(t);
    const otlp = await startOtlpReceiver(t);
    // Every role in one process, with the preload the next test's processes have: this process is also that
    // test's run with tracing on, which shows its checks can fail.
    const dir = tempDir(t, "integrator-tracing-query-");
    const preload = path.join(dir, "record-loaded-modules.mjs");
    fs.writeFileSync(preload, LOADED_MODULES_PRELOAD);
    const loadedFile = path.join(dir, "loaded.json");
    const service = await startMainProcess(
      t,
      {
        NODE_ENV: "test",
        DATABASE_URL: databaseUrl,
        ENCRYPTION_KEY: randomBytes(32).toString("hex"),
        DATA_DIR: dir,
        PORT: "0",
        LOG_LEVEL: "info",
        NODE_OPTIONS: `--import=${pathToFileURL(preload).href}`,
        LOADED_MODULES_FILE: loadedFile,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url.replace(/\/v1\/traces$/, ""),
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      },
      { args: [] },
    );
    const base = `http://127.0.0.1:${service.port}`;
    const secret = (name: string) => `${name}-${randomBytes(12).toString("hex")}`;
    const secrets = [
      "access_token",
      "signature",
      "client_secret",
      "password",
      "refresh_token",
      "assertion",
      "code",
      "token",
    ].map((name) => [name, secret(name)] as const);
    const query = (names: (name: string) => string) =>
      secrets.map(([name, value]) => `${names(name)}=${encodeURIComponent(value)}`).join("&") + "&limit=5";
    // Some spellings the log masks as well: upper case, and a name with a percent-escape.
    // And headers that carry credentials, which spans never record at all.
    const headerSecrets = [
      ["the Authorization header", secret("bearer")],
      ["the X-Callback-Signature header", secret("header-signature")],
      ["a cookie", secret("cookie")],
    ] as const;
    const [bearer, headerSignature, cookie] = headerSecrets.map(([, value]) => value);
    const requests: [string, RequestInit][] = [
      [`/v1/me?${query((name) => name)}`, { headers: { Authorization: `Bearer ${bearer}`, Cookie: `s=${cookie}` } }],
      [
        `/v1/callbacks/partner/acme?${query((name) => name.toUpperCase())}`,
        {
          method: "POST",
          body: "{}",
          headers: { "Content-Type": "application/json", "X-Callback-Signature": `${headerSignature}` },
        },
      ],
      [
        `/token?${query((name) => name.replace("_", "%5F"))}`,
        {
          method: "POST",
          body: "grant_type=password&username=nobody&password=wrong",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
        },
      ],
      [`/nowhere?${query((name) => name)}`, {}],
    ];
    for (const [path, init] of requests) {
      const res = await fetch(`${base}${path}`, init);
      t.ok(res.status >= 400 && res.status < 500, `${path.slice(0, 30)}: ${res.status}`);
    }
    const servers = await waitFor(
      async () => otlp.spans.filter((span) => span.kind === KIND.server && span.values["url.query"] !== undefined),
      (found) => found.length >= requests.length,
      { seconds: 30 },
    );
    t.equal(servers.length, requests.length, "a server span for each request, with its query");

    const exported = otlp.bodies.join("\n");
    for (const [name, value] of secrets) t.notOk(exported.includes(value), `no exported byte holds the ${name}`);
    for (const [what, value] of headerSecrets) t.notOk(exported.includes(value), `no exported byte holds ${what}`);
    // The span's path and query are the log line's URL, request by request.
    const logged = new Map(service.logLines().map((line) => [line.request_id, (line.req as { url?: string })?.url]));
    for (const span of servers) {
      const url = `${String(span.values["url.path"])}?${String(span.values["url.query"])}`;
      t.equal(url, logged.get(span.values["integrator.request_id"]), `${span.name}: as the log shows it`);
      t.match(url, /access_token=\[Redacted\]|ACCESS_TOKEN=\[Redacted\]|access%5Ftoken=\[Redacted\]/, "masked");
      t.match(url, /limit=5$/, "the rest kept");
    }

    // With an endpoint the SDK is loaded and exports the health request's span.
    const answered = await fetch(`${base}/v1/health`);
    t.equal(answered.status, 200, "the service answers");
    service.child.kill("SIGTERM");
    t.match(await service.exited, { code: 0 }, "it stops cleanly");
    const traced = JSON.parse(fs.readFileSync(loadedFile, "utf8")) as { modules: string[]; registered: string[] };
    t.ok(
      traced.modules.some((url) => url.includes("@opentelemetry/sdk-trace")),
      "with an endpoint the SDK is loaded",
    );
    t.ok(traced.registered.includes("trace"), "and its tracer provider registered");
    t.ok(
      otlp.spans.some((span) => span.service === "integrator" && span.name === "GET /v1/health"),
      "and the request's span is exported (service.name integrator for every role in one process)",
    );
  },
);

t.test("with tracing off no OpenTelemetry module is loaded and nothing is exported", async (t) => {
  const databaseUrl = await createTestDatabase(t);
  const otlp = await startOtlpReceiver(t);
  const dir = tempDir(t, "integrator-tracing-off-");
  const preload = path.join(dir, "record-loaded-modules.mjs");
  fs.writeFileSync(preload, LOADED_MODULES_PRELOAD);
  /** Starts every role with `settings`, asks /v1/health, stops it; the OpenTelemetry modules it loaded. */
  const encryptionKey = randomBytes(32).toString("hex");
  const run = async (
    name: string,
    settings: Record<string, string>,
  ): Promise<{ modules: string[]; registered: string[] }> => {
    const loadedFile = path.join(dir, `loaded-${randomBytes(4).toString("hex")}.json`);
    const service = await startMainProcess(
      t,
      {
        NODE_ENV: "test",
        DATABASE_URL: databaseUrl,
        ENCRYPTION_KEY: encryptionKey,
        DATA_DIR: dir,
        PORT: "0",
        LOG_LEVEL: "info",
        NODE_OPTIONS: `--import=${pathToFileURL(preload).href}`,
        LOADED_MODULES_FILE: loadedFile,
        OTEL_BSP_SCHEDULE_DELAY: "100",
        ...settings,
      },
      { args: [] },
    );
    const answered = await fetch(`http://127.0.0.1:${service.port}/v1/health`);
    t.equal(answered.status, 200, `${name}: the service answers`);
    service.child.kill("SIGTERM");
    t.match(await service.exited, { code: 0 }, `${name}: it stops cleanly`);
    return JSON.parse(fs.readFileSync(loadedFile, "utf8")) as { modules: string[]; registered: string[] };
  };

  const nothing = { modules: [], registered: [] };
  t.same(await run("no OTEL_ settings", {}), nothing, "no OTEL_ settings: no SDK loaded, no tracer provider");
  t.same(
    await run("OTEL_SDK_DISABLED", {
      OTEL_SDK_DISABLED: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url.replace(/\/v1\/traces$/, ""),
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "not-exported",
    }),
    nothing,
    "OTEL_SDK_DISABLED=true beside an endpoint: none either",
  );
  t.same(otlp.bodies, [], "nothing was exported");
  // The same run with an endpoint loads the SDK and exports (the test above): the checks here can fail.
});
