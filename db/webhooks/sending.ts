// What the deliver_webhook task reads and records: the delivery to send (one, or several in one call), its
// pacing, the attempt's record (integrator.record_delivery_attempt; several in one call,
// record_delivery_attempts) and a delivery that ends without an attempt.
import type { Knex } from "knex";
import { runPrepared } from "../prepared.ts";
import { runPreparedWithTrace, WITH_TRACE_CONTEXT, type TraceContext } from "../trace-context.ts";
import {
  type AttemptErrorClass,
  type DeliveredEventKind,
  type DeliveryEnvelope,
  type DeliveryStatus,
  type UnsentReason,
  unsentMessageSql,
} from "./views.ts";

/** What the deliver_webhook task needs: the delivery's state and payload and its subscription's target. */
export interface DeliveryToSend {
  id: string;
  tenant_id: string;
  subscription_id: string;
  /** The event's UUID: webhook-id is `evt_` and it. */
  event_id: string;
  event_type: DeliveredEventKind;
  payload: DeliveryEnvelope;
  status: DeliveryStatus;
  attempts: number;
  /** The endpoint; null for a listen session, whose attempts are offered to its listener (worker/listener.ts). */
  url: string | null;
  subscription_active: boolean;
  subscription_disabled: boolean;
  /** Who disabled it: by hand, else endpoint health; null while it is not disabled. */
  subscription_disabled_by: "endpoint_health" | "manual" | null;
  /** The current secret, sealed. */
  secret_encrypted: string;
  /** Every secret that signs now, sealed, newest first: the current one, and the previous one during a rotation's overlap window. */
  secrets_encrypted: string[];
  /** The subscription's rate limit: at most this many attempts a second (paceDelivery); null for none. */
  rate_limit_per_second: number | null;
}

export async function findDeliveryToSend(
  db: Knex,
  tenantId: string,
  deliveryId: string,
): Promise<DeliveryToSend | undefined> {
  // integrator.delivery_to_attempt (db/functions/delivery_to_attempt.sql): the delivery joined to its
  // subscription, planned once per connection.
  const { rows } = await runPrepared<DeliveryToSend>(
    db,
    "delivery_to_attempt",
    "select * from integrator.delivery_to_attempt(?::uuid, ?::uuid)",
    [tenantId, deliveryId],
  );
  return rows[0];
}

/**
 * Several deliveries in one call (integrator.deliveries_to_attempt, db/functions/deliveries_to_attempt.sql):
 * element by element, each delivery named by its tenant and id as findDeliveryToSend would read it, or
 * undefined when there is none.
 */
export async function findDeliveriesToSend(
  db: Knex,
  wanted: readonly { tenantId: string; deliveryId: string }[],
): Promise<(DeliveryToSend | undefined)[]> {
  const { rows } = await runPrepared<DeliveryToSend>(
    db,
    "deliveries_to_attempt",
    "select * from integrator.deliveries_to_attempt(?::uuid[], ?::uuid[])",
    [wanted.map((one) => one.tenantId), wanted.map((one) => one.deliveryId)],
  );
  const found = new Map(rows.map((row) => [`${row.tenant_id}/${row.id}`, row]));
  return wanted.map((one) => found.get(`${one.tenantId}/${one.deliveryId}`));
}

/**
 * The rate limit of the delivery's subscription, kept (integrator.pace_delivery,
 * db/functions/pace_delivery.sql): undefined when the attempt may start now; otherwise the delivery's job was
 * moved to its slot (the delivery's next_attempt_at says when) and this is the number of milliseconds until
 * then. `pacingGeneration`: the running job is one that pace_delivery moved, holding a slot of this
 * generation (its payload's pacing_generation); undefined for any other job.
 */
export async function paceDelivery(
  db: Knex,
  delivery: { tenantId: string; subscriptionId: string; deliveryId: string; attempts: number; rate: number },
  pacingGeneration: number | undefined,
): Promise<number | undefined> {
  const { rows } = await runPrepared<{ wait_seconds: number | null }>(
    db,
    "pace_delivery",
    "select integrator.pace_delivery(?::uuid, ?::uuid, ?::uuid, ?::integer, ?::integer, ?::integer) as wait_seconds",
    [
      delivery.tenantId,
      delivery.subscriptionId,
      delivery.deliveryId,
      delivery.attempts,
      delivery.rate,
      pacingGeneration ?? null,
    ],
  );
  const wait = rows[0]?.wait_seconds;
  return wait === null || wait === undefined ? undefined : Math.max(0, wait * 1000);
}

/** When endpoint health disables a subscription (0 turns a rule off). */
export interface HealthRules {
  disableAfterFailedDeliveries: number;
  disableAfterFailingDays: number;
}

export interface AttemptRecord {
  tenantId: string;
  deliveryId: string;
  /** The delivery's attempts before this one: the record applies only if no one else recorded it first. */
  attemptsBefore: number;
  attemptedAt: Date;
  durationMs: number;
  status: DeliveryStatus;
  responseCode: number | null;
  errorMessage: string | null;
  /** Null when delivered. */
  errorClass: AttemptErrorClass | null;
  /** The attempt's sentence beside its class; null when delivered. */
  failure: string | null;
  /** The headers sent. */
  requestHeaders: Record<string, string>;
  /** What the endpoint answered (headers, the first 4 KiB of its body); null when no answer arrived. */
  response: { headers: Record<string, string>; body: string; bodyTruncated: boolean } | null;
  /** When set (status pending), the next attempt's job is queued for then, in the same statement, and the delivery shows it as next_attempt_at. */
  retryAt?: Date;
  health: HealthRules;
}

const RECORD_DELIVERY_ATTEMPT = `select integrator.record_delivery_attempt(?::uuid, ?::uuid, ?, ?, ?::timestamptz, ?, ?, ?, ?, ?::timestamptz, ?, ?::float8,
       ?, ?::jsonb, ?::jsonb, ?, ?) as recorded`;
/** The same, handing a trace context to the retry's job (db/trace-context.ts). */
const RECORD_DELIVERY_ATTEMPT_TRACED = `${WITH_TRACE_CONTEXT} ${RECORD_DELIVERY_ATTEMPT} from trace_context`;

/**
 * Records one attempt's outcome (on the delivery and as a row of its attempt history), updates its
 * subscription's health (disabling it when a rule says so) and, for a failure with attempts left, queues
 * the next attempt's job — all in one statement, so all happen or none. False when the delivery had
 * moved on (final, or this attempt already recorded by another run), in which case nothing is written.
 * Health never enables a subscription: one already disabled (by hand or by a rule) keeps its time, reason
 * and disabled_by whatever the attempt's outcome. With `trace`, the retry's job carries it.
 */
export async function recordAttempt(db: Knex, attempt: AttemptRecord, trace?: TraceContext): Promise<boolean> {
  const delivered = attempt.status === "delivered";
  const { disableAfterFailedDeliveries, disableAfterFailingDays } = attempt.health;
  // integrator.record_delivery_attempt (db/functions/record_delivery_attempt.sql) does all of it in one
  // call, planned once per connection. The retry's job carries the attempt it is for (queue_delivery_jobs)
  // and the running one simply completes, so graphile-worker's own backoff never drives the schedule.
  const { rows } = await runPreparedWithTrace<{ recorded: boolean }>(
    db,
    trace,
    "record_delivery_attempt",
    { sql: RECORD_DELIVERY_ATTEMPT, tracedSql: RECORD_DELIVERY_ATTEMPT_TRACED },
    [
      attempt.tenantId,
      attempt.deliveryId,
      attempt.attemptsBefore,
      attempt.status,
      attempt.attemptedAt,
      Math.max(0, Math.round(attempt.durationMs)),
      attempt.responseCode,
      attempt.errorMessage === null ? null : attempt.errorMessage.slice(0, 500),
      delivered ? null : attempt.errorClass,
      attempt.retryAt ?? null,
      disableAfterFailedDeliveries,
      disableAfterFailingDays,
      delivered || attempt.failure === null ? null : attempt.failure.slice(0, 500),
      JSON.stringify(attempt.requestHeaders),
      attempt.response === null ? null : JSON.stringify(attempt.response.headers),
      attempt.response === null ? null : attempt.response.body,
      attempt.response?.bodyTruncated ?? false,
    ],
  );
  return rows[0]?.recorded === true;
}

/**
 * Several attempts' records in one call (integrator.record_delivery_attempts,
 * db/functions/record_delivery_attempts.sql), each as recordAttempt would write it, with its trace context;
 * element by element, whether each applied. All or none: when the call fails (a deadlock between two
 * workers' records on a subscription's row, say), each is recorded by a call of its own, and what fails
 * then is that record's own error.
 */
export async function recordAttempts(
  db: Knex,
  attempts: readonly { attempt: AttemptRecord; trace?: TraceContext | undefined }[],
): Promise<(boolean | Error)[]> {
  if (attempts.length === 1 && attempts[0]) {
    const [{ attempt, trace }] = attempts as [{ attempt: AttemptRecord; trace?: TraceContext }];
    return [await recordAttempt(db, attempt, trace)];
  }
  try {
    const { rows } = await runPrepared<{ applied: boolean[] }>(
      db,
      "record_delivery_attempts",
      "select integrator.record_delivery_attempts(?::jsonb) as applied",
      [JSON.stringify(attempts.map(({ attempt, trace }) => attemptArguments(attempt, trace)))],
    );
    const applied = rows[0]?.applied ?? [];
    return attempts.map((_, index) => applied[index] === true);
  } catch {
    return Promise.all(
      attempts.map(({ attempt, trace }) =>
        recordAttempt(db, attempt, trace).catch((error: unknown) =>
          error instanceof Error ? error : new Error(String(error)),
        ),
      ),
    );
  }
}

/** One record's arguments by name, as integrator.record_delivery_attempts reads them. */
function attemptArguments(attempt: AttemptRecord, trace: TraceContext | undefined): Record<string, unknown> {
  const delivered = attempt.status === "delivered";
  return {
    tenant_id: attempt.tenantId,
    delivery_id: attempt.deliveryId,
    attempts_before: attempt.attemptsBefore,
    status: attempt.status,
    attempted_at: attempt.attemptedAt.toISOString(),
    duration_ms: Math.max(0, Math.round(attempt.durationMs)),
    response_code: attempt.responseCode,
    error_message: attempt.errorMessage === null ? null : attempt.errorMessage.slice(0, 500),
    error_class: delivered ? null : attempt.errorClass,
    retry_at: attempt.retryAt?.toISOString() ?? null,
    failed_in_a_row: attempt.health.disableAfterFailedDeliveries,
    failing_days: attempt.health.disableAfterFailingDays,
    failure: delivered || attempt.failure === null ? null : attempt.failure.slice(0, 500),
    request_headers: attempt.requestHeaders,
    response_headers: attempt.response?.headers ?? null,
    response_body: attempt.response?.body ?? null,
    response_body_truncated: attempt.response?.bodyTruncated ?? false,
    traceparent: trace?.traceparent ?? null,
    tracestate: trace?.tracestate ?? null,
  };
}

/**
 * Ends a pending delivery as failed without a further attempt (its subscription is inactive or disabled),
 * saying why: a message, or an UnsentReason worded by the delivery's own attempts.
 */
export async function failWithoutAttempt(
  db: Knex,
  tenantId: string,
  deliveryId: string,
  why: string | UnsentReason,
): Promise<boolean> {
  const message = typeof why === "string" ? why.slice(0, 500) : unsentMessageSql(db, why);
  const updated = await db("integrator.webhook_deliveries")
    .where({ tenant_id: tenantId, id: deliveryId, status: "pending" })
    .update({ status: "failed", error_message: message, next_attempt_at: null, updated_at: db.fn.now() })
    .returning("id");
  return updated.length > 0;
}
