// The remembered responses of Idempotency-Key calls (integrator.idempotency_keys). A keyed write takes,
// looks up and remembers in its own statement (integrator.claim_idempotency_key,
// db/functions/claim_idempotency_key.sql); the rules live in http/idempotency.ts.
import type { Knex } from "knex";
import { runPrepared } from "./prepared.ts";
import { tenantIds } from "./principals.ts";

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
  /** When the key is forgotten, in ms since the epoch (the database's clock). */
  expires_at_ms: number;
}

const FIND_REMEMBERED = `select fingerprint, status_code, response_body, expires_at <= now() as expired,
       (extract(epoch from expires_at) * 1000)::float8 as expires_at_ms
  from integrator.idempotency_keys
 where tenant_id = ? and subject = ? and route = ? and idempotency_key = ?`;

export async function findRemembered(db: Knex, key: IdempotencyRecordKey): Promise<RememberedResponse | undefined> {
  // The key's own columns only: a KeyedWrite (the key with its lock text, fingerprint and TTL) is one too.
  const { rows } = await runPrepared<RememberedResponse>(db, "find_remembered", FIND_REMEMBERED, [
    key.tenant_id,
    key.subject,
    key.route,
    key.idempotency_key,
  ]);
  return rows[0];
}

/** The Idempotency-Key a keyed write is remembered under, and what is remembered with it. */
export interface KeyedWrite extends IdempotencyRecordKey {
  /** When the call began, by this process's clock (ms since the epoch): its response expires no earlier than this plus the TTL. */
  startedAt: number;
  /** The text whose 64-bit hash is the key's advisory lock. */
  lockText: string;
  fingerprint: string;
  ttlHours: number;
}

/** The placeholders of a KeyedWrite, the first parameters of every one-statement keyed write (integrator.*_once). */
export const KEYED_WRITE_PARAMETERS = "?, ?, ?, ?, ?, ?, ?::float8";

/** The bindings of KEYED_WRITE_PARAMETERS, in their order. */
export function keyedWriteArguments(key: KeyedWrite): Knex.RawBinding[] {
  return [key.tenant_id, key.subject, key.route, key.idempotency_key, key.lockText, key.fingerprint, key.ttlHours];
}

/** What a one-statement keyed write found or did (e.g. integrator.record_submission_once). */
export type KeyedOutcome =
  | { outcome: "written" | "remembered"; fingerprint: string; status_code: number; response_body: string }
  | { outcome: "in_progress"; fingerprint: null; status_code: null; response_body: null };

/**
 * Deletes every tenant's expired keys, tenant by tenant in bounded batches (each statement names its
 * tenant and reads the index idempotency_keys_expires_at, led by tenant_id); returns how many went. Run by
 * the purge job. Keys another transaction holds are skipped; the next run takes them.
 */
export async function purgeExpiredKeys(db: Knex, batchSize = 5000): Promise<number> {
  let total = 0;
  for (const tenantId of await tenantIds(db)) total += await purgeExpiredKeysOfTenant(db, tenantId, batchSize);
  return total;
}

/** Deletes the tenant's expired keys in batches of at most `batchSize`; returns how many went. */
export async function purgeExpiredKeysOfTenant(db: Knex, tenantId: string, batchSize = 5000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.raw<{ rowCount: number }>(
      `with doomed as (
         select subject, route, idempotency_key from integrator.idempotency_keys
          where tenant_id = ? and expires_at <= now()
          limit ?
          for update skip locked
       )
       delete from integrator.idempotency_keys k using doomed
        where k.tenant_id = ? and k.subject = doomed.subject and k.route = doomed.route
          and k.idempotency_key = doomed.idempotency_key`,
      [tenantId, batchSize, tenantId],
    );
    total += rowCount;
    if (rowCount < batchSize) return total;
  }
}
