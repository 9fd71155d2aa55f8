// graphile-worker shuts its job runner down when it cannot write a job's outcome (the database is away as
// the job ends). The worker starts a runner again in its process once the old one's running jobs have
// ended, and readiness follows it exactly: 503 from the shutdown until the new runner runs, though the
// database is back meanwhile; its heartbeat is removed, so other processes see no worker either; 200 once
// the new runner runs. The job whose outcome was lost runs again; the process never ends.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import t from "tap";
import { createDatabase, startEmbeddedPostgres, type EmbeddedServer } from "../../db/database.ts";
import { migrateAll } from "../../app/services.ts";
import { checkHealth } from "../../handlers/probes/health-checks.ts";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { startWorker } from "../../worker/runner.ts";
import { startReplica, startTestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

/** A job the test holds until it lets it end; how often it was started. */
function heldJob() {
  let let_go: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (let_go = resolve));
  const job = {
    runs: 0,
    release: () => let_go(),
    task: async () => {
      job.runs++;
      await released;
    },
  };
  return job;
}

t.test(
  "a runner graphile-worker shut down is started again once its jobs have ended; readiness is 503 until then",
  async (t) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-runner-restart-"));
    const port = await freePort();
    let postgres: EmbeddedServer | undefined = await startEmbeddedPostgres({ dataDir, port });
    t.teardown(async () => {
      await postgres?.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    const migrator = createDatabase(postgres.url, 2);
    await migrateAll(migrator, postgres.url);
    await migrator.destroy();

    const lines: Record<string, unknown>[] = [];
    const server = await startTestServer(t, {
      databaseUrl: postgres.url,
      env: { WORKER_DEAD_AFTER_SECONDS: "10" },
      logDestination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    });
    // This process runs the worker and serves readiness, as npm start does.
    server.services.state = { shuttingDown: false };
    // Another API process of the deployment: it knows the worker by its heartbeat only.
    const replica = await startReplica(t, server);

    const ending = heldJob();
    const holding = heldJob();
    const worker = await startWorker(server.services, postgres.url, {
      tasks: { ends_while_the_database_is_away: ending.task, holds_its_slot: holding.task },
      pollInterval: 200,
    });
    t.teardown(() => worker.stop());
    let ended = false;
    void worker.ended.then(() => (ended = true));
    const firstRunnerIds = worker.runnerIds();

    const readiness = async () => {
      const res = await server.request("/v1/readyz");
      const body = (await res.json()) as { checks: Record<string, { status: string }> };
      return { status: res.status, database: body.checks.database?.status, worker: body.checks.worker?.status };
    };
    for (const task of ["ends_while_the_database_is_away", "holds_its_slot"])
      await server.services.db.raw("select graphile_worker.add_job(?, '{}'::json)", [task]);
    await waitFor(
      async () => ending.runs + holding.runs,
      (runs) => runs === 2,
    );
    t.match(await waitFor(readiness, (probe) => probe.status === 200), { status: 200 }, "ready with both jobs running");

    // The database goes away; one job ends then, and its completion cannot be written.
    await postgres.stop();
    postgres = undefined;
    ending.release();
    t.equal(
      await waitFor(
        async () => worker.running(),
        (running) => !running,
      ),
      false,
      "graphile-worker shut the runner down",
    );
    t.equal(server.services.state.jobRunnerRunning, false, "and the process says so");

    // The database is back; the other job still runs in the old runner, so no new one has started.
    postgres = await startEmbeddedPostgres({ dataDir, port });
    t.match(
      await waitFor(readiness, (probe) => probe.database === "healthy"),
      { status: 503, database: "healthy", worker: "degraded" },
      "readiness is 503 with the database back, while no runner runs",
    );
    const heartbeats = () =>
      server.services
        .db("integrator.worker_heartbeats")
        .count<{ n: string }[]>({ n: "*" })
        .then((rows) => Number(rows[0]?.n));
    t.equal(await waitFor(heartbeats, (n) => n === 0), 0, "its heartbeat is removed");
    t.match(
      (await checkHealth(replica.services)).checks.worker,
      { status: "degraded", last_seen_at: null },
      "another process sees no worker",
    );
    t.equal(worker.running(), false, "still no runner while the old one's job runs");
    t.equal(ending.runs, 1);

    holding.release();
    t.equal(
      await waitFor(
        async () => worker.running(),
        (running) => running,
      ),
      true,
      "a new runner runs once the old one's jobs have ended",
    );
    t.match(await waitFor(readiness, (probe) => probe.status === 200), { status: 200 }, "readiness is 200 again");
    t.notSame(worker.runnerIds(), firstRunnerIds, "the heartbeat names the new runner");
    t.equal(await heartbeats(), 1);
    // The job whose completion was lost is released at once and runs again; the other one was completed.
    t.equal(
      await waitFor(
        async () => ending.runs,
        (runs) => runs === 2,
      ),
      2,
      "the job whose completion was lost runs again",
    );
    const left = () =>
      server.services
        .db("graphile_worker.jobs")
        .count<{ n: string }[]>({ n: "*" })
        .then((rows) => Number(rows[0]?.n));
    t.equal(await waitFor(left, (n) => n === 0), 0, "and both jobs are done");
    t.equal(holding.runs, 1, "the job that ended with the database back ran once");
    t.equal(ended, false, "the worker never ended");

    const down = lines.find((line) => String(line.msg).startsWith("job runner down"));
    t.match(down, { level: "error", component: "worker", failure: /completeJob/ }, "the shutdown is logged, with why");
    t.match(
      lines.find((line) => line.msg === "job runner restarted"),
      { level: "info", component: "worker", tries: Number, down_ms: Number },
      "and the restart",
    );
  },
);
