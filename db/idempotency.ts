// The remembered responses of Idempotency-Key calls (integrator.idempotency_keys) and the advisory
// transaction lock that holds a key while its first call runs. The rules live in server/http/idempotency.ts.
import type { Knex } from "knex";

export interface IdempotencyRecordKey {
  tenant_id: string;
  subject: string;
  route: string;
  idempotency_key: string;
}

export interface RememberedResponse {
  fingerprint: string;
  status_code: number;
  /** The response body exactly as it was sent (JSON text, stored as text so that replays are byte-identical). */
  response_body: string;
  expired: boolean;
}

export function findRemembered(db: Knex, key: IdempotencyRecordKey): Promise<RememberedResponse | undefined> {
  return db("integrator.idempotency_keys")
    .where(key)
    .first("fingerprint", "status_code", "response_body", db.raw("expires_at <= now() as expired")) as Promise<
    RememberedResponse | undefined
  >;
}

/** The Idempotency-Key a keyed write is remembered under, and what is remembered with it. */
export interface KeyedWrite extends IdempotencyRecordKey {
  /** The text whose 64-bit hash is the key's advisory lock. */
  lockText: string;
  fingerprint: string;
  ttlHours: number;
}

/** What a one-statement keyed write found or did (e.g. integrator.submit_intake_once). */
export type KeyedOutcome =
  | { outcome: "written" | "remembered"; fingerprint: string; status_code: number; response_body: string }
  | { outcome: "in_progress"; fingerprint: null; status_code: null; response_body: null };

/** Takes the key's advisory transaction lock without waiting; false when another transaction holds it. */
export async function tryLockKey(trx: Knex.Transaction, lockText: string): Promise<boolean> {
  const { rows } = await trx.raw<{ rows: { locked: boolean }[] }>(
    "select pg_try_advisory_xact_lock(hashtextextended(?, 0)) as locked",
    [lockText],
  );
  return rows[0]?.locked === true;
}

export async function forgetRemembered(trx: Knex.Transaction, key: IdempotencyRecordKey): Promise<void> {
  await trx("integrator.idempotency_keys").where(key).delete();
}

export async function remember(
  trx: Knex.Transaction,
  key: IdempotencyRecordKey,
  response: { fingerprint: string; status: number; json: string; ttlHours: number },
): Promise<void> {
  await trx("integrator.idempotency_keys").insert({
    ...key,
    fingerprint: response.fingerprint,
    status_code: response.status,
    response_body: response.json,
    expires_at: trx.raw("now() + ?::float8 * interval '1 hour'", [response.ttlHours]),
  });
}

/** Deletes expired keys in bounded batches; returns how many went. Run by the purge job. */
export async function purgeExpiredKeys(db: Knex, batchSize = 5000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.raw<{ rowCount: number }>(
      `delete from integrator.idempotency_keys where ctid in (
         select ctid from integrator.idempotency_keys where expires_at <= now() limit ?)`,
      [batchSize],
    );
    total += rowCount;
    if (rowCount < batchSize) return total;
  }
}
