// Runs graphile-worker against the service's PostgreSQL: the tasks in worker/tasks, the crontab, fair
// slots between tenants (worker/fairness.ts), and a heartbeat naming this worker's graphile-worker runner
// ids. The health check reads the heartbeats to tell whether a worker is alive; every worker also
// releases, at each beat, the jobs held by workers whose heartbeat stopped WORKER_DEAD_AFTER_SECONDS
// ago (a kill -9 or a crash leaves them locked, and graphile-worker itself waits 4 hours).
import os from "node:os";
import { randomBytes } from "node:crypto";
import { Logger as GraphileLogger, run, runMigrations, type Runner, type TaskList } from "graphile-worker";
import type { Services } from "../server/services.ts";
import type { Logger } from "../server/logger.ts";
import {
  pruneHeartbeats,
  recordHeartbeat,
  releaseJobsOfDeadWorkers,
  removeHeartbeat,
} from "../db/worker-heartbeats.ts";
import { createWorkerPool } from "../db/database.ts";
import { TenantSlots } from "./fairness.ts";
import { WakeUps } from "./pacing.ts";
import { taskList } from "./tasks/index.ts";
import { crontab } from "./crontab.ts";
import { errorMessage } from "../server/error-message.ts";

const HEARTBEAT_INTERVAL_MS = 10_000;

/** A beat at least three times per WORKER_DEAD_AFTER_SECONDS, and at most every 10 s. */
export function heartbeatIntervalMs(deadAfterSeconds: number): number {
  return Math.min(HEARTBEAT_INTERVAL_MS, Math.floor((deadAfterSeconds * 1000) / 3));
}

/** graphile-worker's own schema (graphile_worker); every role applies it at start, like the knex migrations. */
export async function migrateWorkerSchema(connectionString: string): Promise<void> {
  await runMigrations({ connectionString, logger: new GraphileLogger(() => () => undefined) });
}

/**
 * graphile-worker's log lines into ours, level for level (its "warning" is our warn). Its line per
 * completed job ("Completed task ... with success", at info) goes to debug: one line per delivery.
 */
function graphileLogger(log: Logger): GraphileLogger {
  return new GraphileLogger(() => (level, message, meta) => {
    // LogLevel is a const enum of these strings, which type-stripped code cannot import.
    const name: string = level;
    if (name === "error") log.error(message);
    else if (name === "warning") log.warn(message);
    else if (name === "info" && meta?.success !== true) log.info(message);
    else log.debug(message);
  });
}

export interface WorkerHandle {
  workerId: string;
  runner: Runner;
  /** graphile-worker's pool id: what this worker writes into the locked_by of the jobs it takes. */
  runnerIds(): string[];
  slots: TenantSlots;
  /**
   * Settles when the job runner ends by itself, not through stop(), with why: graphile-worker shut itself
   * down (a breaking migration of its schema by a newer version) or failed (a lost database connection).
   * No job runs any more; the heartbeat is already gone. Never settles otherwise.
   */
  ended: Promise<string>;
  stop(): Promise<void>;
}

export async function startWorker(
  services: Services,
  connectionString: string,
  options: { tasks?: TaskList; pollInterval?: number } = {},
): Promise<WorkerHandle> {
  const log = services.logger.child({ component: "worker" });
  const workerId = `${os.hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const { workerDeadAfterSeconds } = services.config;
  const slots = new TenantSlots(services.config.workerConcurrency);
  const runnerIds = new Set<string>();
  slots.events.on("pool:create", ({ workerPool }) => runnerIds.add(workerPool.id));
  // Paced deliveries (a subscription's rate limit) fall due between polls: the pool is nudged then.
  const wakeUps = new WakeUps();
  wakeUps.attach(slots.events);
  const beat = () =>
    recordHeartbeat(services.db, workerId, [...runnerIds])
      .then(() => pruneHeartbeats(services.db))
      .then(() => releaseJobsOfDeadWorkers(services.db, workerDeadAfterSeconds))
      .then((released) => {
        if (released.length > 0)
          log.warn(
            { runner_ids: released, dead_after_seconds: workerDeadAfterSeconds },
            "released the jobs of stopped workers to the queue",
          );
      })
      .catch(() => undefined);
  const pool = createWorkerPool(connectionString, (message) => log.error(message));
  let runner: Runner;
  try {
    runner = await run({
      pgPool: pool,
      concurrency: slots.concurrency,
      forbiddenFlags: slots.forbiddenFlags,
      events: slots.events,
      noHandleSignals: true,
      // On stop, running jobs get this long to finish; then their abort signal fires and the jobs still
      // running are released back to the queue for another worker.
      gracefulShutdownAbortTimeout: services.config.shutdownTimeoutMs,
      pollInterval: options.pollInterval ?? 1000,
      taskList: options.tasks ?? taskList(services, { wakeUps }),
      // Completions that finish in the same tick are written in one statement (graphile-worker 0.17
      // batching). Its localQueue (batched fetching) is not used: it ignores forbiddenFlags, and a slot that
      // passes flags bypasses it, so the jobs it had locked waited unserved (worker/fairness.ts needs the
      // flags); with it, a new-job notification also stops waking an idle slot (it only pulses the local
      // queue), so the spare slot would wait for its poll (docs/performance.md, what did not pay). A job whose completion was not
      // written when the process died is released by the dead-worker sweep and runs again: deliver_webhook
      // (and deliver_webhooks, delivery by delivery) finds its delivery final and does nothing.
      preset: {
        worker: {
          completeJobBatchDelay: 0,
          // Failures the same way: batched, they are flushed when the worker stops. Unbatched, a job failing
          // as the worker stops (a deliver_webhooks job leaving its unstarted deliveries for its next run)
          // was written after the pool had ended, or not at all, and stayed locked until the dead-worker sweep.
          failJobBatchDelay: 0,
        },
      },
      crontab,
      logger: graphileLogger(log),
    });
  } catch (error) {
    wakeUps.stop();
    await pool.end().catch(() => undefined);
    throw error;
  }
  await beat();
  const heartbeat = setInterval(() => void beat(), heartbeatIntervalMs(workerDeadAfterSeconds));
  heartbeat.unref();
  let stopping = false;
  let runnerEnded = false;
  // A runner that ends while nobody stops it leaves a process that looks alive (its heartbeat kept beating)
  // and runs no job: the heartbeat goes at once, and `ended` tells the process to stop.
  const ended = new Promise<string>((resolve) => {
    const end = async (reason: string) => {
      runnerEnded = true;
      if (stopping) return;
      clearInterval(heartbeat);
      await removeHeartbeat(services.db, workerId).catch(() => undefined);
      log.error({ reason }, "the job runner stopped by itself; no job runs in this worker any more");
      resolve(reason);
    };
    runner.promise.then(
      () => end("graphile-worker's job runner ended without an error"),
      (error: unknown) => {
        log.error(`worker stopped: ${errorMessage(error)}`);
        return end(`graphile-worker's job runner failed: ${errorMessage(error)}`);
      },
    );
  });
  return {
    workerId,
    runner,
    runnerIds: () => [...runnerIds],
    slots,
    ended,
    async stop() {
      stopping = true;
      clearInterval(heartbeat);
      wakeUps.stop();
      if (!runnerEnded) await runner.stop();
      // Our pool, ended once graphile-worker is done with it (db/database.ts createWorkerPool says why).
      await pool.end().catch(() => undefined);
      await removeHeartbeat(services.db, workerId).catch(() => undefined);
    },
  };
}
