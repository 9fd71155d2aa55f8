// Failed password grants per username, shared by every replica: after `freeFailures` failures each
// further one locks the username for base x 2^(n-1) seconds (n counting the failures beyond the free
// ones), at most `maxSeconds`. A count whose last failure is a day old starts again.
//
// An attempt is counted before its password is checked (reserveLoginAttempt), in the one statement that
// also reads the lock: concurrent guesses cannot all pass a lock that is not written yet, so at most
// `freeFailures + 1` passwords are checked before the lock holds. A successful grant clears the count.
import type { Knex } from "knex";

export interface LoginBackoff {
  freeFailures: number;
  baseSeconds: number;
  maxSeconds: number;
}

/**
 * The row key of a username: a hash, so guessed names are not stored as sent, of PostgreSQL's lower() of
 * it, the normalisation the user lookup uses (JavaScript's toLowerCase differs: 'İvan' is 'i̇van' there and
 * 'ivan' here, which gave one user two counters).
 */
const USERNAME_KEY = "encode(sha256(convert_to(lower(:username), 'UTF8')), 'hex')";

export type LoginAttempt = { allowed: true } | { allowed: false; lockedForSeconds: number };

/**
 * Counts an attempt for the username as a failure unless the username is locked; one statement, so
 * replicas and concurrent requests never lose a count nor pass a lock. Allowed: check the password, and
 * clear the count when it is right. Not allowed: answer without checking it.
 */
export async function reserveLoginAttempt(db: Knex, username: string, backoff: LoginBackoff): Promise<LoginAttempt> {
  // The failure count after this one; in ON CONFLICT DO UPDATE, f.* is the row as it was.
  const counted = "(case when f.last_failure_at < now() - interval '1 day' then 1 else f.failures + 1 end)";
  const lockFor = (failures: string) => `case when ${failures} > :free
      then now() + make_interval(secs => least(:max::float8,
             :base::float8 * power(2::float8, least(${failures} - :free - 1, 40))))
      else null end`;
  const bindings = { username, free: backoff.freeFailures, base: backoff.baseSeconds, max: backoff.maxSeconds };
  const reserved = await db.raw<{ rows: unknown[] }>(
    `insert into integrator.login_failures as f (username_key, failures, last_failure_at, locked_until)
     values (${USERNAME_KEY}, 1, now(), ${lockFor("1")})
     on conflict (username_key) do update set
       failures = ${counted},
       last_failure_at = now(),
       locked_until = ${lockFor(counted)}
     where f.locked_until is null or f.locked_until <= now()
     returning 1`,
    bindings,
  );
  if (reserved.rows.length > 0) return { allowed: true };
  // Locked: nothing was updated. A new statement sees the lock as committed.
  const lock = await db.raw<{ rows: { seconds: number | null }[] }>(
    `select extract(epoch from (locked_until - now()))::float8 as seconds
       from integrator.login_failures where username_key = ${USERNAME_KEY}`,
    { username },
  );
  return { allowed: false, lockedForSeconds: Math.max(1, lock.rows[0]?.seconds ?? 1) };
}

export async function clearLoginFailures(db: Knex, username: string): Promise<void> {
  await db.raw(`delete from integrator.login_failures where username_key = ${USERNAME_KEY}`, { username });
}

/** Forgets counts whose last failure is more than a day old (called now and then by the grant). */
export async function purgeOldLoginFailures(db: Knex): Promise<void> {
  await db("integrator.login_failures").where("last_failure_at", "<", db.raw("now() - interval '1 day'")).delete();
}
