// Crash recovery (docs/architecture.md, crash recovery): a worker process killed with SIGKILL while its
// deliveries are in flight leaves their jobs locked; readiness reports them as stranded, another worker
// releases them once the dead one's heartbeat is WORKER_DEAD_AFTER_SECONDS old, and every delivery is
// done, sent twice only if it was in flight at the kill: with a job per delivery (fan-out 1) and with
// an event's deliveries in one job (fan-out 4). Real processes, a real HTTPS receiver.
import { spawn } from "node:child_process";
import path from "node:path";
import t from "tap";
import { emitEvent } from "../../db/events.ts";
import { startWorker } from "../../worker/runner.ts";
import { checkHealth } from "../../handlers/probes/health-checks.ts";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import { processEnv } from "../helpers/main-process.ts";

const MAIN = path.join(import.meta.dirname, "..", "..", "app", "main.ts");
const ca = testCa(t);
// The two cases share nothing but the CA (each rig has a database of its own), and each mostly waits on the
// receiver's slow answers and the dead worker's heartbeat: run them at the same time.
t.jobs = 2;

interface WorkerCheck {
  status: string;
  stranded_jobs: number | null;
  overdue_locked_jobs: number | null;
}

for (const fanOut of [1, 4]) {
  const events = 40 / fanOut;
  t.test(
    `kill -9 of a worker mid-delivery, fan-out ${fanOut}: readiness reports the stranded jobs, they are released, every delivery is done within 90 s and only the attempts in flight are sent twice`,
    async (t) => {
      const deadAfter = 10;
      let killed = false;
      const rig = await startWebhookRig(t, ca, {
        worker: false,
        env: { WORKER_DEAD_AFTER_SECONDS: String(deadAfter), WORKER_CONCURRENCY: "5", SHUTDOWN_TIMEOUT_MS: "1000" },
        // Slow answers until the kill, so that attempts are in flight when it comes; at once after it, so that
        // the rest are done as soon as the jobs are released.
        answer: () => ({ status: 200, delayMs: killed ? 0 : 2000 }),
      });
      const { server } = rig;
      for (let i = 0; i < fanOut; i++) await rig.subscribe(rig.receiver.url(`/slow-${i}`));
      await server.services.db.transaction(async (trx) => {
        for (let i = 0; i < events; i++)
          await emitEvent(trx, rig.tenant.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() });
      });

      const child = spawn(process.execPath, [MAIN, "--role=worker"], {
        env: processEnv({ ...server.env, LOG_LEVEL: "silent" }),
        stdio: "ignore",
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.once("exit", (_code, signal) => resolve(signal)),
      );
      t.teardown(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      });
      // Let it deliver a first round and take a second one (each answer takes 2 s).
      await waitFor(
        async () => rig.receiver.received.length,
        (count) => count >= 8,
        { seconds: 60 },
      );
      killed = true;
      child.kill("SIGKILL");
      t.equal(await exited, "SIGKILL");
      const killedAt = performance.now();
      const deliveries = () =>
        server.services
          .db("integrator.webhook_deliveries")
          .where({ tenant_id: rig.tenant.tenantId })
          .select<{ id: string; status: string }[]>("id", "status");
      const sentBeforeKill = new Set(
        rig.receiver.received.map((request) => String(request.headers["x-service-review-delivery"])),
      );
      const pendingAtKill = new Set(
        (await deliveries()).filter((row) => row.status === "pending").map((row) => row.id),
      );
      const inFlightAtKill = new Set([...sentBeforeKill].filter((id) => pendingAtKill.has(id)));
      t.ok(inFlightAtKill.size > 0, `${inFlightAtKill.size} attempts were in flight at the kill`);

      // The public probe says statuses; the counts are the operator's report (GET /health on the metrics port).
      // The report first: nothing releases stranded jobs before the next worker starts below, so a stranded
      // count the report saw still holds when the public probe answers a moment later.
      const readiness = async () => {
        const report = (await checkHealth(server.services)).checks.worker as WorkerCheck;
        const res = await server.request("/v1/readyz");
        const publicWorker = ((await res.json()) as { checks: { worker: { status: string } } }).checks.worker;
        return { status: res.status, publicStatus: publicWorker.status, worker: report };
      };
      // A job per attempt in flight at fan-out 1; at fan-out 4 one job may hold several of them.
      const strandedAtLeast = fanOut === 1 ? inFlightAtKill.size : 1;
      const stranded = await waitFor(readiness, (probe) => (probe.worker.stranded_jobs ?? 0) >= strandedAtLeast, {
        seconds: deadAfter + 20,
      });
      t.equal(stranded.status, 503, "readiness is 503 while jobs are stranded");
      t.equal(stranded.publicStatus, "degraded");
      t.match(stranded.worker, { status: "degraded" });
      t.ok((stranded.worker.stranded_jobs ?? 0) >= strandedAtLeast, `stranded_jobs ${stranded.worker.stranded_jobs}`);
      const strandedSeenAfterMs = performance.now() - killedAt;

      const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
      t.teardown(() => worker.stop());
      const locked = () =>
        server.services
          .db("graphile_worker._private_jobs")
          .whereNotNull("locked_by")
          .whereNotIn("locked_by", worker.runnerIds())
          .count<{ count: number }[]>("* as count")
          .then((rows) => Number(rows[0]?.count ?? 0));
      await waitFor(locked, (count) => count === 0, { seconds: 60 });
      const releasedAfterMs = performance.now() - killedAt;
      const final = await waitFor(deliveries, (rows) => rows.every((row) => row.status === "delivered"), {
        seconds: Math.max(1, 90 - (performance.now() - killedAt) / 1000),
      });
      const doneAfterMs = performance.now() - killedAt;
      t.equal(final.filter((row) => row.status === "delivered").length, 40, "all 40 delivered");
      t.ok(doneAfterMs < 90_000, `done ${Math.round(doneAfterMs / 1000)} s after the kill`);

      const sends = new Map<string, number>();
      for (const request of rig.receiver.received) {
        const id = String(request.headers["x-service-review-delivery"]);
        sends.set(id, (sends.get(id) ?? 0) + 1);
      }
      const twice = [...sends].filter(([, count]) => count > 1).map(([id]) => id);
      t.ok(
        twice.every((id) => inFlightAtKill.has(id) && sends.get(id) === 2),
        `sent twice: ${twice.length}, all of them in flight at the kill (${inFlightAtKill.size}) and only twice`,
      );
      t.equal(sends.size, 40, "every delivery reached the receiver");
      t.comment(
        `fan-out ${fanOut}: kill -9 with ${inFlightAtKill.size} attempts in flight (WORKER_DEAD_AFTER_SECONDS=${deadAfter}): stranded seen by readiness after ${(strandedSeenAfterMs / 1000).toFixed(1)} s, released ${(releasedAfterMs / 1000).toFixed(1)} s and all 40 delivered ${(doneAfterMs / 1000).toFixed(1)} s after the kill; ${twice.length} sent twice`,
      );
      const after = await waitFor(readiness, (probe) => probe.status === 200, { seconds: 20 });
      t.match(after.worker, { status: "healthy", stranded_jobs: 0, overdue_locked_jobs: 0 }, "healthy again");
    },
  );
}
