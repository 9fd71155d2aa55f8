// Idempotency-Key semantics for intake and partner switch (submitIntake's rules in openapi/openapi.yaml;
// docs/decisions.md §4).
// A keyed write is one statement (its own transaction): the key's PostgreSQL advisory transaction lock,
// the look-up of its remembered response, the work and the response remembered with it. A concurrent
// duplicate sees IDEMPOTENCY_IN_PROGRESS, a crash releases the key, and the remembered response exists
// exactly when the work it describes does. A finished response is also kept in this process's memory
// (foundation/replay-memory.ts) until shortly before it expires, and its replays are answered from there.
// `idempotent` is the one wrapper the two keyed operations call; everything else here serves it.
import { canonicalJsonHash } from "../foundation/canonical-json.ts";
import { ApiError } from "./errors.ts";
import type { Services } from "../foundation/services.ts";
import { recordIdempotentReplay } from "../foundation/metrics.ts";
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
function requestFingerprint(body: unknown, effectiveTenantId: string): string {
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
function keyedWrite(scope: IdempotencyScope, fingerprint: string, ttlHours: number): KeyedWrite {
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
function replayFromMemory<B>(services: Pick<Services, "replays">, key: KeyedWrite): IdempotentOutcome<B> | undefined {
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
async function settleKeyedWrite<B>(
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
async function finishedReplay<B>(
  services: Pick<Services, "db" | "replays">,
  key: KeyedWrite,
): Promise<IdempotentOutcome<B> | undefined> {
  const kept = replayFromMemory<B>(services, key);
  if (kept) return kept;
  const finished = await lookUpAndKeep(services, key);
  return finished === undefined ? undefined : replayOf<B>(finished, key.fingerprint, "database");
}

/**
 * An idempotent call: the one way intake and partner switch apply the Idempotency-Key rules. Without a
 * key, `write` runs and its response is sent. With one:
 * - the key: its scope, and the request's fingerprint (canonical JSON of the body and the tenant acted on);
 * - the stored response: a finished call's response is looked for first, in this process's memory (and,
 *   with `replayBeforeWork`, in the database too, for a call that does costly work before its statement);
 * - the replay: a stored response answers as it was sent, byte for byte, for the same fingerprint, and
 *   IDEMPOTENCY_KEY_MISMATCH for another; otherwise `writeOnce` takes the key, writes and remembers the
 *   response in one statement (another call holding the key is IDEMPOTENCY_IN_PROGRESS).
 */
export interface IdempotentCall<B> {
  services: Pick<Services, "db" | "replays" | "config">;
  /** The key's scope, or undefined when the request carries no Idempotency-Key. */
  scope: IdempotencyScope | undefined;
  /** The request body as sent and the tenant it acts on: what the fingerprint covers. */
  body: unknown;
  tenantId: string;
  /** Look a finished response up in the database (not only in memory) before any work. */
  replayBeforeWork?: boolean;
  /** The write without a key: its status and body. */
  write: () => Promise<{ status: number; body: B }>;
  /** The same write under the key, in one statement that also claims the key and remembers the response. */
  writeOnce: (key: KeyedWrite) => Promise<KeyedOutcome>;
}

export async function idempotent<B>(call: IdempotentCall<B>): Promise<IdempotentOutcome<B>> {
  const { services, scope } = call;
  if (scope === undefined) return { ...(await call.write()), replayed: false };
  // No key, no fingerprint: it is only ever compared with a remembered one.
  const key = keyedWrite(scope, requestFingerprint(call.body, call.tenantId), services.config.idempotencyTtlHours);
  const stored = call.replayBeforeWork ? await finishedReplay<B>(services, key) : replayFromMemory<B>(services, key);
  if (stored) return stored;
  return settleKeyedWrite<B>(services, key, await call.writeOnce(key));
}

/**
 * The parts of a handler's reply an outcome decides: its body (on a replay, the remembered bytes to send
 * as they are) and `Idempotent-Replayed: true` on replays.
 */
export function idempotentReply<B>(outcome: IdempotentOutcome<B>): {
  body: B;
  headers: Record<string, string>;
  rawJson?: string;
} {
  return {
    body: outcome.body,
    headers: outcome.replayed ? { [REPLAY_HEADER]: "true" } : {},
    ...(outcome.json === undefined ? {} : { rawJson: outcome.json }),
  };
}
