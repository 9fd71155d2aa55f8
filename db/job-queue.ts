// Reads of graphile-worker's job table for the health check and /metrics. Completed jobs are deleted
// by graphile-worker, so the table is normally short.
import type { Knex } from "knex";

/** Seconds the oldest job that is due and not taken has waited, or null when none is. */
export async function oldestDueJobAge(db: Knex): Promise<number | null> {
  const { rows } = await db.raw<{ rows: { oldest_due_age: number | null }[] }>(
    `select extract(epoch from now() - min(run_at))::float8 as oldest_due_age
       from graphile_worker._private_jobs where is_available and run_at <= now()`,
  );
  return rows[0]?.oldest_due_age ?? null;
}

export interface JobQueueStatistics {
  due: number;
  scheduled: number;
  running: number;
  failed: number;
  oldest_due_seconds: number | null;
}

export async function jobQueueStatistics(db: Knex): Promise<JobQueueStatistics> {
  const { rows } = await db.raw<{ rows: JobQueueStatistics[] }>(`
    select
      count(*) filter (where is_available and run_at <= now())::int as due,
      count(*) filter (where is_available and run_at > now())::int as scheduled,
      count(*) filter (where locked_at is not null)::int as running,
      count(*) filter (where attempts >= max_attempts)::int as failed,
      extract(epoch from now() - min(run_at) filter (where is_available and run_at <= now()))::float8 as oldest_due_seconds
    from graphile_worker._private_jobs
  `);
  const row = rows[0];
  if (!row) throw new Error("job queue query returned no row");
  return row;
}

/**
 * Renews the lock of a running job that its worker still holds (`locked_by`): a deliver_webhooks job
 * does so as its deliveries end, so that "locked for 5 minutes" keeps meaning a job without progress
 * (the health check's overdue_locked_jobs), however many deliveries it carries. Nothing happens to a
 * job another worker holds or that is no longer locked.
 */
export async function renewJobLock(db: Knex, jobId: string, lockedBy: string): Promise<void> {
  await db.raw(
    "update graphile_worker._private_jobs set locked_at = now() where id = ?::bigint and locked_by = ? and locked_at is not null",
    [jobId, lockedBy],
  );
}
