// The dependency checks behind GET /v1/health and GET /v1/readyz: the database answers, every
// migration this code knows is applied, and the worker is alive and keeping up with due jobs.
import { pendingMigrations } from "../../db/database.ts";
import type { Services } from "../../server/services.ts";

export type CheckStatus = "healthy" | "degraded" | "unhealthy";

export interface HealthReport {
  status: CheckStatus;
  version: string;
  checks: {
    database: { status: CheckStatus; latency_ms: number | null };
    worker: { status: CheckStatus; last_seen_at: string | null; oldest_due_job_age_seconds: number | null };
    migrations: { status: CheckStatus; pending: number | null };
  };
}

const CHECK_TIMEOUT_MS = 2000;

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out`)), CHECK_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function checkDatabase(services: Services): Promise<HealthReport["checks"]["database"]> {
  const started = performance.now();
  try {
    await withTimeout(services.db.raw("select 1"), "database check");
    return { status: "healthy", latency_ms: Math.round((performance.now() - started) * 100) / 100 };
  } catch {
    return { status: "unhealthy", latency_ms: null };
  }
}

async function checkMigrations(services: Services): Promise<HealthReport["checks"]["migrations"]> {
  try {
    const pending = await withTimeout(pendingMigrations(services.db), "migrations check");
    return { status: pending.length === 0 ? "healthy" : "unhealthy", pending: pending.length };
  } catch {
    return { status: "unhealthy", pending: null };
  }
}

async function checkWorker(services: Services): Promise<HealthReport["checks"]["worker"]> {
  const { workerStaleSeconds, queueLagSeconds } = services.config.health;
  try {
    const result = await withTimeout(
      services.db.raw<{
        rows: { last_seen_at: Date | null; seen_age: number | null; oldest_due_age: number | null }[];
      }>(`
        select
          (select max(last_seen_at) from integrator.worker_heartbeats) as last_seen_at,
          (select extract(epoch from now() - max(last_seen_at))::float8 from integrator.worker_heartbeats) as seen_age,
          (select extract(epoch from now() - min(run_at))::float8 from graphile_worker._private_jobs
             where is_available and run_at <= now()) as oldest_due_age
      `),
      "worker check",
    );
    const row = result.rows[0];
    const seenAge = row?.seen_age ?? null;
    const oldestDue = row?.oldest_due_age ?? null;
    const alive = seenAge !== null && seenAge <= workerStaleSeconds;
    const keepingUp = oldestDue === null || oldestDue <= queueLagSeconds;
    return {
      status: alive && keepingUp ? "healthy" : "degraded",
      last_seen_at: row?.last_seen_at ? row.last_seen_at.toISOString() : null,
      oldest_due_job_age_seconds: oldestDue === null ? null : Math.max(0, Math.round(oldestDue * 10) / 10),
    };
  } catch {
    return { status: "unhealthy", last_seen_at: null, oldest_due_job_age_seconds: null };
  }
}

export async function checkHealth(services: Services): Promise<HealthReport> {
  const database = await checkDatabase(services);
  const [migrations, worker] =
    database.status === "healthy"
      ? await Promise.all([checkMigrations(services), checkWorker(services)])
      : [
          { status: "unhealthy" as const, pending: null },
          { status: "unhealthy" as const, last_seen_at: null, oldest_due_job_age_seconds: null },
        ];
  const statuses = [database.status, migrations.status, worker.status];
  const status: CheckStatus = statuses.includes("unhealthy")
    ? "unhealthy"
    : statuses.includes("degraded")
      ? "degraded"
      : "healthy";
  return { status, version: services.version, checks: { database, worker, migrations } };
}
