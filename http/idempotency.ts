// Idempotency-Key semantics for intake and partner switch (submitIntake's rules in openapi/openapi.yaml;
// docs/decisions.md §4).
// A keyed write is one statement (its own transaction): the key's PostgreSQL advisory transaction lock,
// the look-up of its remembered response, the work and the response remembered with it. A concurrent
// duplicate sees IDEMPOTENCY_IN_PROGRESS, a crash releases the key, and the remembered response exists
// exactly when the work it describes does. A finished response is also kept in this process's memory
// (./replay-memory.ts) until shortly before it expires, and its replays are answered from there.
import { canonicalJsonHash } from "../server/canonical-json.ts";
import { ApiError } from "./errors.ts";
import type { Services } from "../server/services.ts";
import { recordIdempotentReplay } from "../server/metrics.ts";
import { findRemembered, type KeyedOutcome, type KeyedWrite, type RememberedResponse } from "../db/idempotency.ts";

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

/**
 * A remembered response for this fingerprint is replayed as it was sent (and counted by where it came
 * from); for another one it is IDEMPOTENCY_KEY_MISMATCH.
 */
function replayOf<B>(
  remembered: StoredResponse & Pick<RememberedResponse, "fingerprint">,
  fingerprint: string,
  source: "memory" | "database",
) {
  if (remembered.fingerprint !== fingerprint) {
    throw new ApiError("IDEMPOTENCY_KEY_MISMATCH", "This Idempotency-Key was used with a different request body");
  }
  recordIdempotentReplay(source);
  return sentAsStored<B>(remembered, true);
}

/** What a one-statement keyed write needs to know of its key. Made before the statement: `startedAt` bounds its expiry. */
export function keyedWrite(scope: IdempotencyScope, fingerprint: string, ttlHours: number): KeyedWrite {
  return {
    startedAt: Date.now(),
    tenant_id: scope.tenantId,
    subject: scope.subject,
    route: scope.route,
    idempotency_key: scope.key,
    lockText: idempotencyLockKey(scope),
    fingerprint,
    ttlHours,
  };
}

/** The memory's key of a keyed write: its tenant, subject, route and key, as its lock text names them. */
const memoryKey = (key: KeyedWrite) => key.lockText;

/** A finished call's replay answered from this process's memory (IDEMPOTENCY_KEY_MISMATCH for another body), or undefined. */
export function replayFromMemory<B>(
  services: Pick<Services, "replays">,
  key: KeyedWrite,
): IdempotentOutcome<B> | undefined {
  const kept = services.replays.find(memoryKey(key));
  if (kept === undefined) return undefined;
  return replayOf<B>(
    { fingerprint: kept.fingerprint, status_code: kept.status, response_body: kept.json },
    key.fingerprint,
    "memory",
  );
}

function keep(
  services: Pick<Services, "replays">,
  key: KeyedWrite,
  stored: StoredResponse & { fingerprint: string },
  expiresAt: number,
): void {
  services.replays.remember(key.tenant_id, memoryKey(key), {
    fingerprint: stored.fingerprint,
    status: stored.status_code,
    json: stored.response_body,
    expiresAt,
  });
}

/** The key's unexpired response in the database, kept in memory until the expiry read with it; undefined when it has none. */
async function lookUpAndKeep(
  services: Pick<Services, "db" | "replays">,
  key: KeyedWrite,
): Promise<RememberedResponse | undefined> {
  const finished = await findRemembered(services.db, key);
  if (!finished || finished.expired) return undefined;
  keep(services, key, finished, finished.expires_at_ms);
  return finished;
}

/**
 * The outcome of a write that takes the key, looks it up and writes in one statement (the database
 * does each step: integrator.claim_idempotency_key, db/functions/claim_idempotency_key.sql): a new
 * response is sent as the exact text remembered, so its replays are byte-identical; a remembered one is
 * replayed for the same fingerprint and IDEMPOTENCY_KEY_MISMATCH for another; another call holding the
 * key is IN_PROGRESS.
 * Either response is kept in memory: a new one until its TTL from when this call began (the database's
 * expiry is no earlier), a remembered one until the expiry looked up with it.
 */
export async function settleKeyedWrite<B>(
  services: Pick<Services, "db" | "replays">,
  key: KeyedWrite,
  outcome: KeyedOutcome,
): Promise<IdempotentOutcome<B>> {
  switch (outcome.outcome) {
    case "in_progress":
      throw inProgress();
    case "remembered":
      // The statement does not say when the response expires; the key's row does, once per process.
      if (services.replays.keeps) await lookUpAndKeep(services, key);
      return replayOf<B>(outcome, key.fingerprint, "database");
    case "written":
      keep(services, key, outcome, key.startedAt + key.ttlHours * 3_600_000);
      return sentAsStored<B>(outcome, false);
  }
}

/**
 * A finished first call's response, from memory or looked up without the key's lock (so concurrent
 * replays never see IN_PROGRESS): its replay for the same fingerprint, IDEMPOTENCY_KEY_MISMATCH for
 * another, undefined when the key has no unexpired response. For a keyed write that prepares costly
 * work in the process before its one statement (partner switch signs an assertion): a replay is
 * answered without it.
 */
export async function finishedReplay<B>(
  services: Pick<Services, "db" | "replays">,
  key: KeyedWrite,
): Promise<IdempotentOutcome<B> | undefined> {
  const kept = replayFromMemory<B>(services, key);
  if (kept) return kept;
  const finished = await lookUpAndKeep(services, key);
  return finished === undefined ? undefined : replayOf<B>(finished, key.fingerprint, "database");
}

/** What a handler's reply carries for an outcome: on a replay, the remembered bytes to send as they are. */
export function replayBody(outcome: { json?: string }): { rawJson?: string } {
  return outcome.json === undefined ? {} : { rawJson: outcome.json };
}

/** The response headers of an outcome: `Idempotent-Replayed: true` on replays. */
export function replayHeaders(outcome: { replayed: boolean }): Record<string, string> {
  return outcome.replayed ? { [REPLAY_HEADER]: "true" } : {};
}
