// Each running worker writes a heartbeat row with its graphile-worker runner (pool) ids, the values
// graphile-worker writes into a job's locked_by; the health check reads the newest to tell whether any
// worker is alive, and the jobs of workers whose heartbeat stopped are found and released here.
import type { Knex } from "knex";

export async function recordHeartbeat(db: Knex, workerId: string, runnerIds: readonly string[] = []): Promise<void> {
  await db.raw(
    `insert into integrator.worker_heartbeats (worker_id, last_seen_at, runner_ids) values (?, now(), ?::text[])
     on conflict (worker_id) do update set last_seen_at = now(), runner_ids = excluded.runner_ids`,
    [workerId, [...runnerIds]],
  );
}

// Jobs locked for longer than `seconds` by a runner id that no heartbeat fresher than `seconds` names:
// their worker is gone (killed, crashed, cut off from the database). The age condition also spares a
// runner that took jobs before its first heartbeat was written.
const STRANDED_JOBS = `
  from graphile_worker._private_jobs jobs
 where jobs.locked_by is not null
   and jobs.locked_at < now() - make_interval(secs => ?)
   and not exists (
     select 1 from integrator.worker_heartbeats beats
      where beats.last_seen_at > now() - make_interval(secs => ?)
        and jobs.locked_by = any (beats.runner_ids)
   )`;

/**
 * Releases the jobs of workers that stopped heart-beating `deadAfterSeconds` ago back to the queue
 * (graphile_worker.force_unlock_workers, the documented way); returns the runner ids released.
 */
export async function releaseJobsOfDeadWorkers(db: Knex, deadAfterSeconds: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { runner_ids: string[] | null }[] }>(
    `select array_agg(distinct jobs.locked_by) as runner_ids ${STRANDED_JOBS}`,
    [deadAfterSeconds, deadAfterSeconds],
  );
  const runnerIds = rows[0]?.runner_ids ?? [];
  // A runner id found dead stays dead (ids are random per run), so unlocking after the read is safe.
  if (runnerIds.length > 0) await db.raw("select graphile_worker.force_unlock_workers(?::text[])", [runnerIds]);
  return runnerIds;
}

/**
 * Releases the jobs still locked by these runner ids back to the queue at once (graphile_worker.force_unlock_workers):
 * for a runner of this process that has shut down, whose jobs run nowhere any more.
 */
export async function releaseJobsOfRunners(db: Knex, runnerIds: readonly string[]): Promise<void> {
  if (runnerIds.length > 0) await db.raw("select graphile_worker.force_unlock_workers(?::text[])", [[...runnerIds]]);
}

export interface LockedJobCounts {
  /** Locked by a worker whose heartbeat stopped (see releaseJobsOfDeadWorkers). */
  stranded: number;
  /** Locked for longer than `overdueSeconds`, whoever holds them. */
  overdue: number;
}

export async function lockedJobCounts(
  db: Knex,
  deadAfterSeconds: number,
  overdueSeconds: number,
): Promise<LockedJobCounts> {
  const { rows } = await db.raw<{ rows: LockedJobCounts[] }>(
    `select (select count(*)::int ${STRANDED_JOBS}) as stranded,
            (select count(*)::int from graphile_worker._private_jobs
              where locked_at < now() - make_interval(secs => ?)) as overdue`,
    [deadAfterSeconds, deadAfterSeconds, overdueSeconds],
  );
  return rows[0] ?? { stranded: 0, overdue: 0 };
}

/** Forgets workers not seen for a day (they stopped without removing their row). */
export async function pruneHeartbeats(db: Knex): Promise<void> {
  await db.raw("delete from integrator.worker_heartbeats where last_seen_at < now() - interval '1 day'");
}

export async function removeHeartbeat(db: Knex, workerId: string): Promise<void> {
  await db("integrator.worker_heartbeats").where({ worker_id: workerId }).delete();
}

export interface WorkerLiveness {
  lastSeenAt: Date | null;
  /** Seconds since the newest heartbeat, or null when no worker has one. */
  secondsSinceSeen: number | null;
}

export async function workerLiveness(db: Knex): Promise<WorkerLiveness> {
  const { rows } = await db.raw<{ rows: { last_seen_at: Date | null; seen_age: number | null }[] }>(
    `select max(last_seen_at) as last_seen_at,
            extract(epoch from now() - max(last_seen_at))::float8 as seen_age
       from integrator.worker_heartbeats`,
  );
  return { lastSeenAt: rows[0]?.last_seen_at ?? null, secondsSinceSeen: rows[0]?.seen_age ?? null };
}
