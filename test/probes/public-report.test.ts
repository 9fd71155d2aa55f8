// The public probes say statuses only (details are for operators, on the metrics port); readyz?scope=api
// is the API instance's own readiness, independent of the worker; and a stopping API drains: readiness
// 503 at once, requests on kept-alive connections still answered through SHUTDOWN_DRAIN_SECONDS.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import t, { type Test } from "tap";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { startTestServer } from "../helpers/server.ts";
import { startApiService } from "../helpers/service.ts";
import { waitFor } from "../helpers/wait.ts";
import { parse } from "yaml";

const startApi = (t: Test, env: Record<string, string> = {}) =>
  startApiService(t, { RATE_LIMIT_PROBE_PER_MINUTE: "100000", RATE_LIMIT_ANON_PER_MINUTE: "100000", ...env });

t.test("the public probes say the statuses and nothing else", async (t) => {
  const server = await startTestServer(t);
  for (const probe of ["/v1/health", "/v1/readyz", "/v1/readyz?scope=api"]) {
    const text = await (await server.request(probe)).text();
    const body = JSON.parse(text) as { checks: Record<string, object> };
    t.same(Object.keys(body).sort(), ["checks", "status"], `${probe}: status and checks only`);
    for (const [name, check] of Object.entries(body.checks))
      t.same(Object.keys(check), ["status"], `${probe}: ${name} says its status only`);
    t.notMatch(text, /version|last_seen_at|oldest_due_job_age_seconds|latency_ms|pending|0\.1\.0/);
  }
});

t.test("the operator's report with every detail is GET /health on the metrics port", async (t) => {
  const metricsPort = await freePort();
  const { running } = await startApi(t, { METRICS_PORT: String(metricsPort) });
  const res = await fetch(`http://127.0.0.1:${running.metricsPort}/health`);
  t.equal(res.status, 200);
  const report = (await res.json()) as {
    version: string;
    checks: { database: { latency_ms: unknown }; worker: { last_seen_at: unknown }; migrations: { pending: number } };
  };
  t.equal(report.version, "0.1.0");
  t.type(report.checks.database.latency_ms, "number");
  t.ok("last_seen_at" in report.checks.worker);
  t.equal(report.checks.migrations.pending, 0);
});

t.test("readyz?scope=api is 200 without a worker, while readyz (all) is 503", async (t) => {
  const server = await startTestServer(t);
  const all = await server.request("/v1/readyz");
  t.equal(all.status, 503, "no worker: the service as a whole is not ready");
  t.equal(((await all.json()) as { checks: { worker: { status: string } } }).checks.worker.status, "degraded");
  const api = await server.request("/v1/readyz?scope=api");
  t.equal(api.status, 200, "this API instance can serve");
  t.same(await api.json(), {
    status: "healthy",
    checks: { database: { status: "healthy" }, migrations: { status: "healthy" } },
  });
  t.equal((await server.request("/v1/readyz?scope=everything")).status, 422, "an unknown scope is a 422");
});

t.test(
  "on stop the API drains: readiness 503 at once, keep-alive requests answered for SHUTDOWN_DRAIN_SECONDS, no resets",
  async (t) => {
    const { running, baseUrl } = await startApi(t, { SHUTDOWN_DRAIN_SECONDS: "2", SHUTDOWN_TIMEOUT_MS: "10000" });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    t.teardown(() => agent.destroy());
    const get = (pathname: string) =>
      new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
        const request = http.get(`${baseUrl}${pathname}`, { agent }, (res) => {
          let body = "";
          res.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
          res.once("end", () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
        });
        request.once("error", reject);
      });

    // Eight clients on kept-alive connections, each sending the next request as soon as one is answered.
    let stopAt = Number.POSITIVE_INFINITY;
    const failures: string[] = [];
    let answered = 0;
    let answeredAfterStop = 0;
    const client = async () => {
      while (Date.now() < stopAt) {
        try {
          const res = await get("/.well-known/jwks.json");
          if (res.status !== 200) failures.push(`status ${res.status}`);
          answered++;
          if (stopAt !== Number.POSITIVE_INFINITY) answeredAfterStop++;
        } catch (error) {
          failures.push((error as NodeJS.ErrnoException).code ?? String(error));
        }
      }
    };
    const clients = Array.from({ length: 8 }, client);
    await waitFor(
      async () => answered,
      (count) => count >= 200,
      { seconds: 30 },
    );

    const stopped = running.stop("SIGTERM");
    // The clients keep going well into the 2 s drain window, as a load balancer's would before it notices.
    stopAt = Date.now() + 1000;
    const readiness = await get("/v1/readyz?scope=api");
    t.equal(readiness.status, 503, "readiness is 503 as soon as the stop begins");
    t.match(JSON.parse(readiness.body), { status: "unhealthy", shutting_down: true });
    t.equal(readiness.connection, "close", "responses close their connection while draining");
    await Promise.all(clients);
    const report = await stopped;

    t.same(failures, [], "no request failed: no ECONNRESET, no refused connection");
    t.ok(answeredAfterStop > 0, `requests were answered during the drain window (${answeredAfterStop})`);
    t.equal(report.clean, true, "the stop was clean");
  },
);

t.test("container health checks use the API's own readiness, not the whole service's", async (t) => {
  const root = path.join(import.meta.dirname, "..", "..");
  const compose = parse(fs.readFileSync(path.join(root, "compose.yaml"), "utf8")) as {
    services: Record<string, { healthcheck?: { test?: string[]; disable?: boolean } }>;
  };
  t.match(compose.services.api?.healthcheck?.test?.join(" "), /\/v1\/readyz\?scope=api/);
  t.equal(compose.services.worker?.healthcheck?.disable, true, "the worker serves no HTTP to probe");
  const healthcheck = fs
    .readFileSync(path.join(root, "Dockerfile"), "utf8")
    .split("\n")
    .filter((line) => /readyz/.test(line));
  t.ok(healthcheck.length > 0 && healthcheck.every((line) => line.includes("/v1/readyz?scope=api")));
});
