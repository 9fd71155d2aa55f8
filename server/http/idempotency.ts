// Idempotency-Key semantics for intake and partner switch (spec: "Idempotency rules"; decisions §4).
// The key is held by a PostgreSQL advisory transaction lock for the whole call, so a concurrent
// duplicate sees IDEMPOTENCY_IN_PROGRESS and a crash releases it; the remembered response is written
// in the same transaction as the work it describes, so both exist or neither does.
import type { Knex } from "knex";
import { canonicalJsonHash } from "../canonical-json.ts";
import { ApiError } from "./errors.ts";
import {
  findRemembered,
  forgetRemembered,
  remember,
  tryLockKey,
  type IdempotencyRecordKey,
  type KeyedOutcome,
  type KeyedWrite,
  type RememberedResponse,
} from "../../db/idempotency.ts";

export interface IdempotencyScope {
  tenantId: string;
  subject: string;
  /** The operation the key belongs to: keys of different routes never meet. */
  route: string;
  key: string;
}

export interface IdempotentResponse<B> {
  status: number;
  body: B;
}

export interface IdempotentOutcome<B> extends IdempotentResponse<B> {
  replayed: boolean;
  /**
   * On a replay, the remembered body exactly as the first call sent it: the reply sends these bytes
   * (`rawJson`), so a replay is byte-identical to the first answer.
   */
  json?: string;
}

export const REPLAY_HEADER = "Idempotent-Replayed";

/** Fingerprint of a request: canonical JSON (key order does not matter) of the body and the tenant it acts on. */
export function requestFingerprint(body: unknown, effectiveTenantId: string): string {
  return canonicalJsonHash({ body: body ?? null, tenant_id: effectiveTenantId });
}

/** The text whose 64-bit hash is the advisory lock of a key (JSON keeps the parts unambiguous). */
export function idempotencyLockKey(scope: IdempotencyScope): string {
  return JSON.stringify([scope.tenantId, scope.subject, scope.route, scope.key]);
}

function inProgress(): ApiError {
  return new ApiError(
    "IDEMPOTENCY_IN_PROGRESS",
    "A request with this Idempotency-Key is still being processed; retry shortly",
    { headers: { "Retry-After": "1" } },
  );
}

type StoredResponse = Pick<RememberedResponse, "status_code" | "response_body">;

/** A response as stored: sent as the very text stored (`json`). */
function sentAsStored<B>(stored: StoredResponse, replayed: boolean): IdempotentOutcome<B> {
  const json = stored.response_body;
  return { status: stored.status_code, body: JSON.parse(json) as B, json, replayed };
}

/** A remembered response for this fingerprint is replayed as it was sent; for another one it is IDEMPOTENCY_KEY_MISMATCH. */
function replayOf<B>(remembered: StoredResponse & Pick<RememberedResponse, "fingerprint">, fingerprint: string) {
  if (remembered.fingerprint !== fingerprint) {
    throw new ApiError("IDEMPOTENCY_KEY_MISMATCH", "This Idempotency-Key was used with a different request body");
  }
  return sentAsStored<B>(remembered, true);
}

/** The row a key's response is remembered under. */
function recordKeyOf(scope: IdempotencyScope): IdempotencyRecordKey {
  return { tenant_id: scope.tenantId, subject: scope.subject, route: scope.route, idempotency_key: scope.key };
}

/** What a one-statement keyed write needs to know of its key. */
export function keyedWrite(scope: IdempotencyScope, fingerprint: string, ttlHours: number): KeyedWrite {
  return { ...recordKeyOf(scope), lockText: idempotencyLockKey(scope), fingerprint, ttlHours };
}

/**
 * The same rules as runIdempotent for a write that takes the key, looks it up and writes in one
 * statement (the database function does each step; see db/migrations/0014_intake_with_key.ts):
 * a new response is sent as the exact text remembered, so its replays are byte-identical.
 */
export function settleKeyedWrite<B>(outcome: KeyedOutcome, fingerprint: string): IdempotentOutcome<B> {
  switch (outcome.outcome) {
    case "in_progress":
      throw inProgress();
    case "remembered":
      return replayOf<B>(outcome, fingerprint);
    case "written":
      return sentAsStored<B>(outcome, false);
  }
}

/**
 * Runs `work` in a transaction. Without a scope every call does the work. With one, the first
 * successful (2xx) response is remembered for ttlHours and replayed for the same fingerprint;
 * a different fingerprint is IDEMPOTENCY_KEY_MISMATCH; a call while another holds the key is
 * IDEMPOTENCY_IN_PROGRESS. Errors thrown by `work` roll everything back and are not remembered.
 */
export async function runIdempotent<B>(
  db: Knex,
  scope: IdempotencyScope | undefined,
  fingerprint: string,
  ttlHours: number,
  work: (trx: Knex.Transaction) => Promise<IdempotentResponse<B>>,
): Promise<IdempotentOutcome<B>> {
  if (!scope) {
    const response = await db.transaction(work);
    return { ...response, replayed: false };
  }
  const where = recordKeyOf(scope);
  // A finished first call is answered without the lock, so concurrent replays never see IN_PROGRESS.
  const finished = await findRemembered(db, where);
  if (finished && !finished.expired) return replayOf<B>(finished, fingerprint);

  return db.transaction(async (trx) => {
    if (!(await tryLockKey(trx, idempotencyLockKey(scope)))) {
      throw inProgress();
    }
    // Under the lock: the first call may have committed between the look-up above and the lock.
    const remembered = await findRemembered(trx, where);
    if (remembered && !remembered.expired) return replayOf<B>(remembered, fingerprint);
    if (remembered) await forgetRemembered(trx, where);
    const response = await work(trx);
    if (response.status >= 200 && response.status < 300) {
      // Remembered as the exact text the response is sent as (res.json writes JSON.stringify of the same body).
      await remember(trx, where, {
        fingerprint,
        status: response.status,
        json: JSON.stringify(response.body),
        ttlHours,
      });
    }
    return { ...response, replayed: false };
  });
}

/** What a handler's reply carries for an outcome: on a replay, the remembered bytes to send as they are. */
export function replayBody(outcome: { json?: string }): { rawJson?: string } {
  return outcome.json === undefined ? {} : { rawJson: outcome.json };
}

/** The response headers of an outcome: `Idempotent-Replayed: true` on replays. */
export function replayHeaders(outcome: { replayed: boolean }): Record<string, string> {
  return outcome.replayed ? { [REPLAY_HEADER]: "true" } : {};
}
