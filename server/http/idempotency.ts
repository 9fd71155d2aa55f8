// Idempotency-Key semantics for intake and partner switch (spec: "Idempotency rules"; decisions §4).
// A keyed write is one statement (its own transaction): the key's PostgreSQL advisory transaction lock,
// the look-up of its remembered response, the work and the response remembered with it. A concurrent
// duplicate sees IDEMPOTENCY_IN_PROGRESS, a crash releases the key, and the remembered response exists
// exactly when the work it describes does.
import type { Knex } from "knex";
import { canonicalJsonHash } from "../canonical-json.ts";
import { ApiError } from "./errors.ts";
import { findRemembered, type KeyedOutcome, type KeyedWrite, type RememberedResponse } from "../../db/idempotency.ts";

export interface IdempotencyScope {
  tenantId: string;
  subject: string;
  /** The operation the key belongs to: keys of different routes never meet. */
  route: string;
  key: string;
}

export interface IdempotentOutcome<B> {
  status: number;
  body: B;
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

/** What a one-statement keyed write needs to know of its key. */
export function keyedWrite(scope: IdempotencyScope, fingerprint: string, ttlHours: number): KeyedWrite {
  return {
    tenant_id: scope.tenantId,
    subject: scope.subject,
    route: scope.route,
    idempotency_key: scope.key,
    lockText: idempotencyLockKey(scope),
    fingerprint,
    ttlHours,
  };
}

/**
 * The outcome of a write that takes the key, looks it up and writes in one statement (the database
 * does each step: integrator.claim_idempotency_key, migration 0017): a new response is sent as the
 * exact text remembered, so its replays are byte-identical; a remembered one is replayed for the same
 * fingerprint and IDEMPOTENCY_KEY_MISMATCH for another; another call holding the key is IN_PROGRESS.
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
 * A finished first call's response, looked up without the key's lock (so concurrent replays never see
 * IN_PROGRESS): its replay for the same fingerprint, IDEMPOTENCY_KEY_MISMATCH for another, undefined
 * when the key has no unexpired response. For a keyed write that prepares costly work in the process
 * before its one statement (partner switch signs an assertion): a replay is answered without it.
 */
export async function finishedReplay<B>(db: Knex, key: KeyedWrite): Promise<IdempotentOutcome<B> | undefined> {
  const finished = await findRemembered(db, key);
  return finished && !finished.expired ? replayOf<B>(finished, key.fingerprint) : undefined;
}

/** What a handler's reply carries for an outcome: on a replay, the remembered bytes to send as they are. */
export function replayBody(outcome: { json?: string }): { rawJson?: string } {
  return outcome.json === undefined ? {} : { rawJson: outcome.json };
}

/** The response headers of an outcome: `Idempotent-Replayed: true` on replays. */
export function replayHeaders(outcome: { replayed: boolean }): Record<string, string> {
  return outcome.replayed ? { [REPLAY_HEADER]: "true" } : {};
}
