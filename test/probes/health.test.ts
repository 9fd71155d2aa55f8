// /v1/health always answers 200 with the checks; /v1/readyz answers 200 only when all are healthy.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import t from "tap";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { startTestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";
import { startWorker } from "../../worker/runner.ts";
import { createDatabase, startEmbeddedPostgres } from "../../db/database.ts";
import { migrateAll } from "../../app/services.ts";
import { checkHealth } from "../../handlers/probes/health-checks.ts";

/** Polls until the probe answers `status`, for at most `seconds`: no fixed sleeps. */
async function waitForStatus(url: string, status: number, seconds: number): Promise<Response> {
  const answered = async () => {
    const res = await fetch(url);
    // A response that is not the one awaited is drained, so its connection can be reused.
    if (res.status !== status) await res.arrayBuffer();
    return res;
  };
  return waitFor(answered, (res) => res.status === status, { seconds, intervalMs: 200 });
}

t.test("with the database, migrations and a worker in order both probes say healthy", async (t) => {
  const server = await startTestServer(t);
  const worker = await startWorker(server.services, server.databaseUrl);
  t.teardown(() => worker.stop());
  const health = await server.request("/v1/health");
  t.equal(health.status, 200);
  const body = await health.json();
  t.equal(body.status, "healthy");
  t.same(body.checks, {
    database: { status: "healthy" },
    worker: { status: "healthy" },
    migrations: { status: "healthy" },
  });
  t.equal((await server.request("/v1/readyz")).status, 200);
});

t.test("without a live worker health is degraded: /v1/health still 200, /v1/readyz 503", async (t) => {
  const server = await startTestServer(t);
  const health = await server.request("/v1/health");
  t.equal(health.status, 200);
  const body = await health.json();
  t.equal(body.status, "degraded");
  t.equal(body.checks.worker.status, "degraded");
  const ready = await server.request("/v1/readyz");
  t.equal(ready.status, 503);
  t.equal((await ready.json()).status, "degraded");
});

t.test("a due job waiting longer than HEALTH_QUEUE_LAG_SECONDS makes health degraded", async (t) => {
  const server = await startTestServer(t, { env: { HEALTH_QUEUE_LAG_SECONDS: "5" } });
  const worker = await startWorker(server.services, server.databaseUrl, { tasks: {} });
  await worker.stop();
  // A worker is "seen" (heartbeat) but a job for a task nobody runs has been due for ten minutes.
  await server.services.db.raw("insert into integrator.worker_heartbeats (worker_id) values ('probe-test')");
  await server.services.db.raw(
    "select graphile_worker.add_job('nobody_runs_this', '{}'::json, run_at => now() - interval '10 minutes')",
  );
  const body = await (await server.request("/v1/health")).json();
  t.equal(body.checks.worker.status, "degraded");
  // The age itself is for operators only (GET /health on the metrics port, test/probes/public-report.test.ts).
  const report = await checkHealth(server.services);
  t.ok((report.checks.worker.oldest_due_job_age_seconds ?? 0) >= 590);
  t.equal((await server.request("/v1/readyz")).status, 503);
});

t.test(
  "a job locked by a live worker is not stranded; one locked longer than 5 minutes is overdue and makes readiness 503",
  async (t) => {
    const server = await startTestServer(t);
    const worker = await startWorker(server.services, server.databaseUrl, { tasks: {} });
    t.teardown(() => worker.stop());
    const [runnerId] = worker.runnerIds();
    t.type(runnerId, "string", "the heartbeat names graphile-worker's runner id");
    const lock = async (minutes: number) => {
      const added = await server.services.db.raw<{ rows: { id: string }[] }>(
        "select (graphile_worker.add_job('nobody_runs_this', '{}'::json)).id",
      );
      await server.services.db.raw(
        "update graphile_worker._private_jobs set locked_by = ?, locked_at = now() - make_interval(mins => ?) where id = ?",
        [runnerId ?? "", minutes, added.rows[0]?.id ?? 0],
      );
    };
    await lock(2);
    t.equal((await server.request("/v1/readyz")).status, 200);
    // The counts are for operators only (GET /health on the metrics port); the public probes say statuses.
    t.match((await checkHealth(server.services)).checks.worker, {
      status: "healthy",
      stranded_jobs: 0,
      overdue_locked_jobs: 0,
    });
    await lock(6);
    const ready = await server.request("/v1/readyz");
    t.equal(ready.status, 503);
    t.match((await ready.json()).checks.worker, { status: "degraded" });
    t.match((await checkHealth(server.services)).checks.worker, {
      status: "degraded",
      stranded_jobs: 0,
      overdue_locked_jobs: 1,
    });
  },
);

t.test("no secrets, connection strings or hostnames in the health body", async (t) => {
  const server = await startTestServer(t);
  const text = await (await server.request("/v1/health")).text();
  t.notMatch(text, /postgres(ql)?:\/\//);
  t.notMatch(text, /127\.0\.0\.1|localhost/);
  t.notMatch(text, new RegExp(os.hostname()));
});

t.test("readyz answers 503 while the database is stopped and 200 again once it is back", async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-readyz-"));
  const port = await freePort();
  let postgres = await startEmbeddedPostgres({ dataDir, port });
  t.teardown(async () => {
    await postgres.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const migrator = createDatabase(postgres.url, 2);
  await migrateAll(migrator, postgres.url);
  await migrator.destroy();

  const server = await startTestServer(t, { databaseUrl: postgres.url });
  const worker = await startWorker(server.services, postgres.url);
  t.teardown(() => worker.stop().catch(() => undefined));
  t.equal((await waitForStatus(`${server.baseUrl}/v1/readyz`, 200, 20)).status, 200, "ready while everything runs");

  await postgres.stop();
  const down = await waitForStatus(`${server.baseUrl}/v1/readyz`, 503, 20);
  t.equal(down.status, 503, "503 while the database is stopped");
  t.equal((await down.json()).checks.database.status, "unhealthy");
  const health = await server.request("/v1/health");
  t.equal(health.status, 200, "the legacy health check still answers 200");
  t.equal((await health.json()).status, "unhealthy");

  postgres = await startEmbeddedPostgres({ dataDir, port });
  t.equal(
    (await waitForStatus(`${server.baseUrl}/v1/readyz`, 200, 60)).status,
    200,
    "200 again once the database is back",
  );
});
