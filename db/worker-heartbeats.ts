// Each running worker writes a heartbeat row; the health check reads the newest to tell whether any
// worker is alive.
import type { Knex } from "knex";

export async function recordHeartbeat(db: Knex, workerId: string): Promise<void> {
  await db.raw(
    `insert into integrator.worker_heartbeats (worker_id, last_seen_at) values (?, now())
     on conflict (worker_id) do update set last_seen_at = now()`,
    [workerId],
  );
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
