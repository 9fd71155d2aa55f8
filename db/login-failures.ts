// Failed password grants per username, shared by every replica: after `freeFailures` failures each
// further one locks the username for base x 2^(n-1) seconds (n counting the failures beyond the free
// ones), at most `maxSeconds`. A count whose last failure is a day old starts again.
import type { Knex } from "knex";

export interface LoginBackoff {
  freeFailures: number;
  baseSeconds: number;
  maxSeconds: number;
}

/** Seconds the username (its key) is still locked; 0 when it is not. */
export async function loginLockedFor(db: Knex, usernameKey: string): Promise<number> {
  const row = (await db("integrator.login_failures")
    .where({ username_key: usernameKey })
    .first(db.raw("extract(epoch from (locked_until - now()))::float8 as seconds"))) as
    { seconds: number | null } | undefined;
  return Math.max(0, row?.seconds ?? 0);
}

/** Counts one failure; resolves to the lock it starts in seconds (0: none yet). One statement, so replicas never lose a count. */
export async function recordLoginFailure(db: Knex, usernameKey: string, backoff: LoginBackoff): Promise<number> {
  // The failure count after this one; in ON CONFLICT DO UPDATE, f.* is the row as it was.
  const counted = "(case when f.last_failure_at < now() - interval '1 day' then 1 else f.failures + 1 end)";
  const lockFor = (failures: string) => `case when ${failures} > :free
      then now() + make_interval(secs => least(:max::float8,
             :base::float8 * power(2::float8, least(${failures} - :free - 1, 40))))
      else null end`;
  const result = await db.raw<{ rows: { lock_seconds: number | null }[] }>(
    `insert into integrator.login_failures as f (username_key, failures, last_failure_at, locked_until)
     values (:key, 1, now(), ${lockFor("1")})
     on conflict (username_key) do update set
       failures = ${counted},
       last_failure_at = now(),
       locked_until = ${lockFor(counted)}
     returning extract(epoch from (f.locked_until - now()))::float8 as lock_seconds`,
    { key: usernameKey, free: backoff.freeFailures, base: backoff.baseSeconds, max: backoff.maxSeconds },
  );
  return Math.max(0, result.rows[0]?.lock_seconds ?? 0);
}

export async function clearLoginFailures(db: Knex, usernameKey: string): Promise<void> {
  await db("integrator.login_failures").where({ username_key: usernameKey }).delete();
}

/** Forgets counts whose last failure is more than a day old (called now and then by the grant). */
export async function purgeOldLoginFailures(db: Knex): Promise<void> {
  await db("integrator.login_failures").where("last_failure_at", "<", db.raw("now() - interval '1 day'")).delete();
}
