// The dependency checks behind GET /v1/health and GET /v1/readyz: the database answers, every
// migration this code knows is applied, and the worker is alive, keeping up with due jobs, and no job is
// stranded (locked by a worker whose heartbeat stopped) or overdue (locked longer than any attempt takes).
// A process that runs the worker itself also needs its own job runner running (it is down between a
// shutdown graphile-worker made by itself and its restart, worker/runner.ts).
import { pendingMigrations, pingDatabase } from "../../db/database.ts";
import { oldestDueJobAge } from "../../db/job-queue.ts";
import { lockedJobCounts, workerLiveness } from "../../db/worker-heartbeats.ts";
import { withTimeout } from "../../foundation/timeouts.ts";
import type { Services } from "../../foundation/services.ts";
import { rfc3339OrNull } from "../../db/timestamps.ts";

export type CheckStatus = "healthy" | "degraded" | "unhealthy";

export interface HealthReport {
  status: CheckStatus;
  version: string;
  checks: {
    database: { status: CheckStatus; latency_ms: number | null };
    worker: {
      status: CheckStatus;
      last_seen_at: string | null;
      oldest_due_job_age_seconds: number | null;
      stranded_jobs: number | null;
      overdue_locked_jobs: number | null;
    };
    migrations: { status: CheckStatus; pending: number | null };
  };
}

const CHECK_TIMEOUT_MS = 2000;

/**
 * A job locked this long is overdue: an attempt lasts at most WEBHOOK_TIMEOUT_MS (at most 2 minutes), and
 * a deliver_webhooks job, which may carry many, renews its lock as they end (worker/tasks/deliver_webhooks.ts).
 */
export const OVERDUE_LOCK_SECONDS = 300;

const WORKER_UNKNOWN = {
  status: "unhealthy" as const,
  last_seen_at: null,
  oldest_due_job_age_seconds: null,
  stranded_jobs: null,
  overdue_locked_jobs: null,
};

async function checkDatabase(services: Services): Promise<HealthReport["checks"]["database"]> {
  const started = performance.now();
  try {
    await withTimeout(pingDatabase(services.db), CHECK_TIMEOUT_MS, "database check");
    return { status: "healthy", latency_ms: Math.round((performance.now() - started) * 100) / 100 };
  } catch {
    return { status: "unhealthy", latency_ms: null };
  }
}

async function checkMigrations(services: Services): Promise<HealthReport["checks"]["migrations"]> {
  try {
    const pending = await withTimeout(pendingMigrations(services.db), CHECK_TIMEOUT_MS, "migrations check");
    return { status: pending.length === 0 ? "healthy" : "unhealthy", pending: pending.length };
  } catch {
    return { status: "unhealthy", pending: null };
  }
}

async function checkWorker(services: Services): Promise<HealthReport["checks"]["worker"]> {
  const { workerStaleSeconds, queueLagSeconds } = services.config.health;
  try {
    const [liveness, oldestDue, locked] = await withTimeout(
      Promise.all([
        workerLiveness(services.db),
        oldestDueJobAge(services.db),
        lockedJobCounts(services.db, services.config.workerDeadAfterSeconds, OVERDUE_LOCK_SECONDS),
      ]),
      CHECK_TIMEOUT_MS,
      "worker check",
    );
    const seenAge = liveness.secondsSinceSeen;
    const alive = seenAge !== null && seenAge <= workerStaleSeconds && services.state?.jobRunnerRunning !== false;
    const keepingUp = oldestDue === null || oldestDue <= queueLagSeconds;
    const noStuckJobs = locked.stranded === 0 && locked.overdue === 0;
    return {
      status: alive && keepingUp && noStuckJobs ? "healthy" : "degraded",
      last_seen_at: rfc3339OrNull(liveness.lastSeenAt),
      oldest_due_job_age_seconds: oldestDue === null ? null : Math.max(0, Math.round(oldestDue * 10) / 10),
      stranded_jobs: locked.stranded,
      overdue_locked_jobs: locked.overdue,
    };
  } catch {
    return WORKER_UNKNOWN;
  }
}

export async function checkHealth(services: Services): Promise<HealthReport> {
  const database = await checkDatabase(services);
  const [migrations, worker] =
    database.status === "healthy"
      ? await Promise.all([checkMigrations(services), checkWorker(services)])
      : [{ status: "unhealthy" as const, pending: null }, WORKER_UNKNOWN];
  const statuses = [database.status, migrations.status, worker.status];
  const status: CheckStatus = statuses.includes("unhealthy")
    ? "unhealthy"
    : statuses.includes("degraded")
      ? "degraded"
      : "healthy";
  return { status, version: services.version, checks: { database, worker, migrations } };
}
