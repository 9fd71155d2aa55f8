// Metrics: Prometheus text on a port of its own, with request durations by operationId, method and
// status, the database pool, the job queue and webhook delivery outcomes; the server sends the security
// headers and holds no request longer than the API's request timeouts.
import net from "node:net";
import t from "tap";
import { recordDeliveryOutcome, startMetricsServer } from "../../foundation/metrics.ts";
import { createTestTenant, startReplica, startTestServer } from "../helpers/server.ts";

/** The value of one sample line, e.g. sample(text, 'integrator_job_queue_depth{state="due"}'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((entry) => entry.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test("GET /metrics on METRICS_PORT after some requests", async (t) => {
  const server = await startTestServer(t);
  const metrics = await startMetricsServer(server.services, { port: 0, host: "127.0.0.1" });
  t.teardown(() => metrics.close());
  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${metrics.port}/metrics`);
    t.equal(res.status, 200);
    t.match(res.headers.get("content-type"), /^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  const tenant = await createTestTenant(server.services);
  await (await server.request("/.well-known/jwks.json")).arrayBuffer();
  await (await server.request("/.well-known/jwks.json")).arrayBuffer();
  await (await server.request("/v1/intake/submissions/x")).arrayBuffer();
  await (
    await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: { filename: "a.pdf", file_size: 1, mime_type: "application/pdf" },
    })
  ).arrayBuffer();
  await (await server.request("/v1/no-such-route")).arrayBuffer();
  // A job nobody runs, due for ten minutes.
  await server.services.db.raw(
    "select graphile_worker.add_job('nobody_runs_this', '{}'::json, run_at => now() - interval '10 minutes')",
  );
  await server.services.db.raw(
    "select graphile_worker.add_job('nobody_runs_this', '{}'::json, run_at => now() + interval '1 hour')",
  );
  recordDeliveryOutcome("delivered");
  recordDeliveryOutcome("delivered");
  recordDeliveryOutcome("retrying");
  recordDeliveryOutcome("failed");

  const text = await scrape();
  t.equal(
    sample(text, 'integrator_http_request_duration_seconds_count{operation_id="getJwks",method="GET",status="200"}'),
    2,
    "request histogram by operationId, method and status",
  );
  t.equal(
    sample(
      text,
      'integrator_http_request_duration_seconds_count{operation_id="getIntakeSubmission",method="GET",status="401"}',
    ),
    1,
  );
  t.equal(
    sample(
      text,
      'integrator_http_request_duration_seconds_count{operation_id="submitIntake",method="POST",status="201"}',
    ),
    1,
  );
  t.equal(
    sample(text, 'integrator_http_request_duration_seconds_count{operation_id="unmatched",method="GET",status="404"}'),
    1,
    "unknown routes share one label value",
  );
  t.ok(
    (sample(
      text,
      'integrator_http_request_duration_seconds_sum{operation_id="submitIntake",method="POST",status="201"}',
    ) ?? 0) > 0,
  );
  t.match(
    text,
    /integrator_http_request_duration_seconds_bucket\{le="0.1",operation_id="getJwks",method="GET",status="200"\} \d/,
  );

  t.type(sample(text, 'integrator_db_pool_connections{state="used"}'), "number", "pool: used");
  t.type(sample(text, 'integrator_db_pool_connections{state="free"}'), "number", "pool: free");
  t.equal(sample(text, "integrator_db_pool_pending_acquires"), 0, "pool: pending");

  t.equal(sample(text, 'integrator_job_queue_depth{state="due"}'), 1, "the due job is counted");
  t.equal(sample(text, 'integrator_job_queue_depth{state="scheduled"}'), 1, "the future job is scheduled");
  t.equal(sample(text, 'integrator_job_queue_depth{state="running"}'), 0);
  t.ok((sample(text, "integrator_job_queue_oldest_due_seconds") ?? 0) >= 590, "oldest due job age");
  t.equal(sample(text, "integrator_job_queue_scrape_error"), 0);

  t.equal(sample(text, 'integrator_webhook_delivery_outcomes_total{outcome="delivered"}'), 2);
  t.equal(sample(text, 'integrator_webhook_delivery_outcomes_total{outcome="retrying"}'), 1);
  t.equal(sample(text, 'integrator_webhook_delivery_outcomes_total{outcome="failed"}'), 1);
  t.equal(sample(text, 'integrator_http_requests_shed_total{reason="db_pool_pending"}'), 0);
  t.equal(sample(text, 'integrator_http_requests_rate_limited_total{scope="principal"}'), 0);
  t.match(text, /^process_cpu_user_seconds_total /m, "the process's default metrics");

  t.test("the counts go on between scrapes", async (t) => {
    await (await server.request("/.well-known/jwks.json")).arrayBuffer();
    t.equal(
      sample(
        await scrape(),
        'integrator_http_request_duration_seconds_count{operation_id="getJwks",method="GET",status="200"}',
      ),
      3,
    );
  });

  t.test("only /metrics is served there, and /metrics is not served on the API port", async (t) => {
    t.equal((await fetch(`http://127.0.0.1:${metrics.port}/other`)).status, 404);
    t.equal((await fetch(`http://127.0.0.1:${metrics.port}/metrics`, { method: "POST" })).status, 405);
    const api = await server.request("/metrics");
    t.equal(api.status, 404);
    t.equal((await api.json()).error.code, "NOT_FOUND");
  });

  t.test("an unreadable job queue is reported, the rest is still served", async (t) => {
    await server.services.db.raw("alter table graphile_worker._private_jobs rename to _private_jobs_gone");
    t.teardown(() => server.services.db.raw("alter table graphile_worker._private_jobs_gone rename to _private_jobs"));
    const text = await scrape();
    t.equal(sample(text, "integrator_job_queue_scrape_error"), 1);
    t.equal(sample(text, 'integrator_job_queue_depth{state="due"}'), undefined);
    t.type(sample(text, "integrator_db_pool_pending_acquires"), "number");
  });
});

t.test(
  "the metrics server sends the security headers on every answer and closes a request that does not arrive in time",
  async (t) => {
    const server = await startTestServer(t, {
      env: { HTTP_HEADERS_TIMEOUT_MS: "1000", HTTP_REQUEST_TIMEOUT_MS: "2000" },
    });
    const metrics = await startMetricsServer(server.services, {
      port: 0,
      host: "127.0.0.1",
      healthReport: async () => ({ status: "ok" }),
    });
    t.teardown(() => metrics.close());
    for (const [path, method, status] of [
      ["/metrics", "GET", 200],
      ["/health", "GET", 200],
      ["/other", "GET", 404],
      ["/metrics", "POST", 405],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${metrics.port}${path}`, { method });
      t.equal(res.status, status, `${method} ${path}`);
      await res.arrayBuffer();
      t.match(
        Object.fromEntries(res.headers),
        {
          "x-content-type-options": "nosniff",
          "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
          "x-frame-options": "DENY",
          "referrer-policy": "no-referrer",
          "cache-control": "no-store",
        },
        `${method} ${path}: the security headers`,
      );
    }

    // Half a request line's headers, then nothing: Node's own default would hold the connection for 60 s.
    const socket = net.connect(metrics.port, "127.0.0.1");
    t.teardown(() => socket.destroy());
    const answer: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => answer.push(chunk));
    const startedAt = performance.now();
    socket.write("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const closed = await new Promise<boolean>((resolve) => {
      const deadline = setTimeout(() => resolve(false), 15_000);
      socket.once("close", () => {
        clearTimeout(deadline);
        resolve(true);
      });
    });
    const waited = performance.now() - startedAt;
    t.ok(closed, `the server closed the connection (after ${waited.toFixed(0)} ms)`);
    t.ok(waited < 5000, "within HTTP_HEADERS_TIMEOUT_MS and Node's checking interval");
    t.match(Buffer.concat(answer).toString("latin1"), /^HTTP\/1\.1 408 /, "answered 408 Request Timeout");
  },
);

t.test("replays are counted by where their response came from, and the replay memory is gauged", async (t) => {
  const writer = await startTestServer(t);
  const reader = await startReplica(t, writer);
  const metrics = await startMetricsServer(reader.services, { port: 0, host: "127.0.0.1" });
  t.teardown(() => metrics.close());
  const tenant = await createTestTenant(writer.services);
  const submit = (server: typeof writer) =>
    server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: { filename: "a.pdf", file_size: 1, mime_type: "application/pdf" },
      headers: { "Idempotency-Key": "metrics-replay" },
    });
  const scrape = async () => (await fetch(`http://127.0.0.1:${metrics.port}/metrics`)).text();
  const before = await scrape();
  const counted = (text: string, source: string) =>
    (sample(text, `integrator_idempotent_replays_total{source="${source}"}`) ?? Number.NaN) -
    (sample(before, `integrator_idempotent_replays_total{source="${source}"}`) ?? Number.NaN);
  t.equal(sample(before, "integrator_idempotency_memory_responses"), 0);

  t.equal((await submit(writer)).status, 201);
  t.equal((await submit(reader)).headers.get("idempotent-replayed"), "true", "the reader's first replay: the database");
  t.equal((await submit(reader)).headers.get("idempotent-replayed"), "true", "its second: memory");
  const text = await scrape();
  t.equal(counted(text, "database"), 1);
  t.equal(counted(text, "memory"), 1);
  t.equal(sample(text, "integrator_idempotency_memory_responses"), 1, "the reader keeps the response");
  t.ok((sample(text, "integrator_idempotency_memory_bytes") ?? 0) > 0);
});
