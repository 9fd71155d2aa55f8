// Runs graphile-worker against the service's PostgreSQL: the tasks in worker/tasks, the crontab, and a
// heartbeat the health check reads to tell whether a worker is alive.
import os from "node:os";
import { randomBytes } from "node:crypto";
import { Logger, run, runMigrations, type Runner, type TaskList } from "graphile-worker";
import type { Services } from "../server/services.ts";
import { pruneHeartbeats, recordHeartbeat, removeHeartbeat } from "../db/worker-heartbeats.ts";
import { taskList } from "./tasks/index.ts";
import { crontab } from "./crontab.ts";

const HEARTBEAT_INTERVAL_MS = 10_000;

/** graphile-worker's own schema (graphile_worker); every role applies it at start, like the knex migrations. */
export async function migrateWorkerSchema(connectionString: string): Promise<void> {
  await runMigrations({ connectionString, logger: quietLogger() });
}

function quietLogger(log: (level: string, message: string) => void = () => undefined): Logger {
  return new Logger(() => (level, message) => log(level, message));
}

export interface WorkerHandle {
  workerId: string;
  runner: Runner;
  stop(): Promise<void>;
}

export async function startWorker(
  services: Services,
  connectionString: string,
  options: { log?: (level: string, message: string) => void; tasks?: TaskList; pollInterval?: number } = {},
): Promise<WorkerHandle> {
  const workerId = `${os.hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const beat = () =>
    recordHeartbeat(services.db, workerId)
      .then(() => pruneHeartbeats(services.db))
      .catch(() => undefined);
  const runner = await run({
    connectionString,
    concurrency: services.config.workerConcurrency,
    noHandleSignals: true,
    // On stop, running jobs get this long to finish; then their abort signal fires and the jobs still
    // running are released back to the queue for another worker.
    gracefulShutdownAbortTimeout: services.config.shutdownTimeoutMs,
    pollInterval: options.pollInterval ?? 1000,
    taskList: options.tasks ?? taskList(services),
    // graphile-worker's batching (0.17): the pool fetches and locks up to concurrency + 1 due jobs at a
    // time and hands them out locally (one get_jobs round trip for many jobs), and completions
    // that finish in the same tick are written in one statement. A job whose completion was not yet
    // written when the process died runs again after its lock expires (4 h): deliver_webhook then
    // finds its delivery final and does nothing, or, if a retry is still pending, makes that attempt
    // early; nothing is lost either way.
    preset: {
      worker: {
        localQueue: { size: services.config.workerConcurrency + 1 },
        completeJobBatchDelay: 0,
      },
    },
    crontab,
    logger: quietLogger(options.log),
  });
  // A lost database connection ends the runner's promise; the health check reports it, the process keeps serving.
  runner.promise.catch((error: unknown) =>
    options.log?.("error", `worker stopped: ${error instanceof Error ? error.message : String(error)}`),
  );
  await beat();
  const heartbeat = setInterval(() => void beat(), HEARTBEAT_INTERVAL_MS);
  heartbeat.unref();
  return {
    workerId,
    runner,
    async stop() {
      clearInterval(heartbeat);
      await runner.stop();
      await removeHeartbeat(services.db, workerId).catch(() => undefined);
    },
  };
}
