// Runs graphile-worker against the service's PostgreSQL: the tasks in worker/tasks, the crontab, fair
// slots between tenants (worker/fairness.ts), and a heartbeat naming this worker's graphile-worker runner
// ids. The health check reads the heartbeats to tell whether a worker is alive; every worker also
// releases, at each beat, the jobs held by workers whose heartbeat stopped WORKER_DEAD_AFTER_SECONDS
// ago (a kill -9 or a crash leaves them locked, and graphile-worker itself waits 4 hours).
//
// A database outage does not end the worker. graphile-worker shuts its job runner down when it cannot
// write a job's outcome (its batched completions give up at the first failure), so the runner is started
// again in this process: once the jobs of the one that shut down have ended, with a growing wait between
// tries while the database is still away, and a log line for each. Until a runner runs again, the
// process says so (ProcessState.jobRunnerRunning: its readiness is 503) and its heartbeat is removed, so
// that other processes' readiness sees no worker either.
import os from "node:os";
import { randomBytes } from "node:crypto";
import { setTimeout as pause } from "node:timers/promises";
import type { Notification } from "pg";
import { Logger as GraphileLogger, run, type Runner, type TaskList } from "graphile-worker";
import type { Services } from "../foundation/services.ts";
import type { Logger } from "../foundation/logger.ts";
import {
  pruneHeartbeats,
  recordHeartbeat,
  releaseJobsOfDeadWorkers,
  releaseJobsOfRunners,
  removeHeartbeat,
} from "../db/worker-heartbeats.ts";
import { createWorkerPool } from "../db/database.ts";
import { TenantSlots } from "./fairness.ts";
import { WakeUps } from "./pacing.ts";
import { taskList } from "./tasks/index.ts";
import { crontab } from "./crontab.ts";
import { errorMessage } from "../foundation/error-message.ts";

const HEARTBEAT_INTERVAL_MS = 10_000;

/** Waits between tries to start a job runner again: doubling from the first up to the last. */
const RESTART_FIRST_WAIT_MS = 250;
const RESTART_LONGEST_WAIT_MS = 5000;

/** The wait after the `tries`-th failed try to start a job runner again. */
export function restartWaitMs(tries: number): number {
  return Math.min(RESTART_LONGEST_WAIT_MS, RESTART_FIRST_WAIT_MS * 2 ** (tries - 1));
}

/** A beat at least three times per WORKER_DEAD_AFTER_SECONDS, and at most every 10 s. */
export function heartbeatIntervalMs(deadAfterSeconds: number): number {
  return Math.min(HEARTBEAT_INTERVAL_MS, Math.floor((deadAfterSeconds * 1000) / 3));
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
  /** The job runner running now: graphile-worker's; another one after a restart. */
  readonly runner: Runner;
  /** graphile-worker's pool id(s) of the runner running now: what it writes into the locked_by of the jobs it takes. */
  runnerIds(): string[];
  /** The fair slots of the runner running now. */
  readonly slots: TenantSlots;
  /** Whether a job runner runs: false from a shutdown graphile-worker made by itself until the next one runs. */
  running(): boolean;
  /**
   * Settles when the job runner ends by itself for good, with why: graphile-worker shut itself down on
   * the notice of a breaking migration of its schema by a newer version (this code cannot run beside it).
   * No job runs any more; the heartbeat is already gone. Never settles otherwise: a runner that shut down
   * for another reason (a lost database) is started again.
   */
  ended: Promise<string>;
  stop(): Promise<void>;
}

/** One graphile-worker runner of this worker. */
interface JobRunner {
  runner: Runner;
  slots: TenantSlots;
  /** Its pool ids: what the jobs it took say in locked_by. */
  poolIds: Set<string>;
  /**
   * Settles once none of its jobs runs any more after a shutdown: when its pool's graceful shutdown has let
   * every running job end (graphile-worker's end itself can hang after a failed completion batch), or when
   * the runner has ended.
   */
  drained: Promise<void>;
  /** What made graphile-worker shut it down: a failed completion, failure or job, or a breaking migration. */
  failure: string | undefined;
  schemaMovedOn: boolean;
}

/** graphile-worker's notice (channel worker:migrate) that a newer version applied a breaking migration. */
function announcesBreakingMigration(message: Notification): boolean {
  if (message.channel !== "worker:migrate" || message.payload === undefined) return false;
  try {
    const payload: unknown = JSON.parse(message.payload);
    return typeof payload === "object" && payload !== null && "breaking" in payload && payload.breaking === true;
  } catch {
    return false;
  }
}

export async function startWorker(
  services: Services,
  connectionString: string,
  options: { tasks?: TaskList; pollInterval?: number } = {},
): Promise<WorkerHandle> {
  const log = services.logger.child({ component: "worker" });
  const workerId = `${os.hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const { workerDeadAfterSeconds } = services.config;
  // Paced deliveries (a subscription's rate limit) fall due between polls: the pool is nudged then.
  const wakeUps = new WakeUps();
  const stopping = new AbortController();
  const tasks = options.tasks ?? taskList(services, { wakeUps, stopping: stopping.signal });
  const pool = createWorkerPool(connectionString, (message) => log.error(message));

  let current: JobRunner;
  let running = false;
  const setRunning = (value: boolean) => {
    running = value;
    if (services.state) services.state.jobRunnerRunning = value;
  };

  /** Beats in a row that reached the database. */
  let reachedInARow = 0;
  const beat = async () => {
    try {
      if (!running) {
        await removeHeartbeat(services.db, workerId);
        return;
      }
      await recordHeartbeat(services.db, workerId, [...current.poolIds]);
      await pruneHeartbeats(services.db);
      // Right after an outage every worker's heartbeat is as old as the outage: the others get one interval
      // to beat again before their jobs count as those of stopped workers.
      if (++reachedInARow < 2) return;
      const released = await releaseJobsOfDeadWorkers(services.db, workerDeadAfterSeconds);
      if (released.length > 0)
        log.warn(
          { runner_ids: released, dead_after_seconds: workerDeadAfterSeconds },
          "released the jobs of stopped workers to the queue",
        );
    } catch {
      reachedInARow = 0;
    }
  };

  let stopBeating: () => void = () => undefined;
  let endedForGood: (reason: string) => void = () => undefined;
  const ended = new Promise<string>((resolve) => (endedForGood = resolve));
  let restarting: Promise<void> | undefined;

  const startRunner = async (): Promise<JobRunner> => {
    const slots = new TenantSlots(services.config.workerConcurrency);
    const poolIds = new Set<string>();
    let drain: () => void = () => undefined;
    const drained = new Promise<void>((resolve) => (drain = resolve));
    const state = { failure: undefined as string | undefined, schemaMovedOn: false };
    const { events } = slots;
    events.on("pool:create", ({ workerPool }) => poolIds.add(workerPool.id));
    events.on("pool:fatalError", ({ action, error }) => (state.failure ??= `${action}: ${errorMessage(error)}`));
    events.on("worker:fatalError", ({ error }) => (state.failure ??= errorMessage(error)));
    events.on("pool:listen:notification", ({ message }) => {
      if (announcesBreakingMigration(message)) state.schemaMovedOn = true;
    });
    // Only once run() has returned: graphile-worker shuts a pool down after it has started.
    events.on("pool:gracefulShutdown", ({ message }) => shutDownByItself(jobRunner, message));
    events.on("pool:gracefulShutdown:complete", () => drain());
    events.on("pool:gracefulShutdown:error", () => drain());
    wakeUps.attach(events);
    const runner = await run({
      pgPool: pool,
      concurrency: slots.concurrency,
      forbiddenFlags: slots.forbiddenFlags,
      events,
      noHandleSignals: true,
      // On stop, running jobs get this long to finish; then their abort signal fires and the jobs still
      // running are released back to the queue for another worker.
      gracefulShutdownAbortTimeout: services.config.shutdownTimeoutMs,
      pollInterval: options.pollInterval ?? 1000,
      taskList: tasks,
      // Completions that finish in the same tick are written in one statement (graphile-worker 0.17
      // batching). Its localQueue (batched fetching) is not used: it ignores forbiddenFlags, and a slot that
      // passes flags bypasses it, so the jobs it had locked waited unserved (worker/fairness.ts needs the
      // flags); with it, a new-job notification also stops waking an idle slot (it only pulses the local
      // queue), so the spare slot would wait for its poll (docs/performance.md, what did not pay). A job whose completion was not
      // written when the process died is released by the dead-worker sweep and runs again: deliver_webhook
      // (and deliver_webhooks, delivery by delivery) finds its delivery final and does nothing. A batch that
      // cannot be written (the database is away) makes graphile-worker shut the runner down: see above.
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
    runner.promise.then(drain, drain);
    const jobRunner: JobRunner = {
      runner,
      slots,
      poolIds,
      drained,
      get failure() {
        return state.failure;
      },
      get schemaMovedOn() {
        return state.schemaMovedOn;
      },
    };
    return jobRunner;
  };

  /** graphile-worker began shutting `ended` down, and nobody asked it to: no job is taken from here on. */
  function shutDownByItself(ended: JobRunner, message: string): void {
    if (stopping.signal.aborted || ended !== current || !running) return;
    setRunning(false);
    void beat();
    if (!ended.schemaMovedOn)
      log.error(
        { reason: message, failure: ended.failure ?? null },
        "job runner down: graphile-worker shut it down; it is started again once its running jobs have ended",
      );
    restarting = replace(ended);
  }

  /** Once the jobs of `ended` have ended: gone for good after a breaking migration, else started again. */
  async function replace(ended: JobRunner): Promise<void> {
    const downSince = performance.now();
    await Promise.race([ended.drained, new Promise((resolve) => stopping.signal.addEventListener("abort", resolve))]);
    if (stopping.signal.aborted) return;
    // What is left of it (its cron); its pool has shut down already.
    ended.runner.stop().catch(() => undefined);
    if (ended.schemaMovedOn) {
      const reason = "graphile-worker shut its job runner down: a newer version migrated its schema";
      stopBeating();
      await removeHeartbeat(services.db, workerId).catch(() => undefined);
      log.error({ reason }, "the job runner stopped by itself; no job runs in this worker any more");
      endedForGood(reason);
      return;
    }
    for (let tries = 1; !stopping.signal.aborted; tries++) {
      try {
        // Its jobs run nowhere now: back to the queue at once, rather than WORKER_DEAD_AFTER_SECONDS later.
        await releaseJobsOfRunners(services.db, [...ended.poolIds]);
        const next = await startRunner();
        if (stopping.signal.aborted) {
          await next.runner.stop().catch(() => undefined);
          return;
        }
        current = next;
        // Logged before readiness turns: a readiness answer given before this line's time was 503.
        log.info({ tries, down_ms: Math.round(performance.now() - downSince) }, "job runner restarted");
        setRunning(true);
        await beat();
        return;
      } catch (error) {
        const waitMs = restartWaitMs(tries);
        log.warn(
          { tries, retry_in_ms: waitMs, error: errorMessage(error) },
          "job runner not restarted yet; trying again",
        );
        await pause(waitMs, undefined, { signal: stopping.signal }).catch(() => undefined);
      }
    }
  }

  try {
    current = await startRunner();
  } catch (error) {
    wakeUps.stop();
    await pool.end().catch(() => undefined);
    throw error;
  }
  setRunning(true);
  await beat();
  const heartbeat = setInterval(() => void beat(), heartbeatIntervalMs(workerDeadAfterSeconds));
  heartbeat.unref();
  stopBeating = () => clearInterval(heartbeat);
  return {
    workerId,
    get runner() {
      return current.runner;
    },
    runnerIds: () => [...current.poolIds],
    get slots() {
      return current.slots;
    },
    running: () => running,
    ended,
    async stop() {
      stopping.abort();
      stopBeating();
      wakeUps.stop();
      await restarting;
      // A runner that shut down by itself has been stopped already; its jobs have ended or end now (a record
      // waiting for the database gives up).
      if (running) await current.runner.stop();
      else await current.drained;
      setRunning(false);
      // Our pool, ended once graphile-worker is done with it (db/database.ts createWorkerPool says why).
      await pool.end().catch(() => undefined);
      await removeHeartbeat(services.db, workerId).catch(() => undefined);
    },
  };
}
