// Every job the worker runs, declared once: its identifier and its payload type (graphile-worker's
// typed task list, GraphileWorker.Tasks). Producers (integrator.queue_delivery_jobs's SQL, called by
// emit_event and db/webhooks/deliveries.ts; the crontab) and the tasks in worker/tasks use these names; worker/tasks/index.ts must map every one.
import type {} from "graphile-worker";
import { isUuid } from "./ids.ts";

/**
 * The W3C trace context of the statement that queued a delivery job, when tracing was on
 * (db/trace-context.ts): the worker's span of the job continues that trace.
 */
export interface CarriedTraceContext {
  traceparent?: string;
  tracestate?: string;
}

export interface DeliverWebhookPayload extends CarriedTraceContext {
  tenant_id: string;
  delivery_id: string;
  /**
   * The delivery's attempts when the job was queued (integrator.queue_delivery_jobs,
   * db/functions/queue_delivery_jobs.sql): the job sends only while the delivery still has that many.
   * Jobs queued by releases before this rule had none (and a job key instead); upgrading gave those still
   * queued their delivery's attempts (migration 0022_queued_jobs_name_their_attempt). One queued by hand
   * without it is sent as before.
   */
  attempts?: number;
  /**
   * Set on the job integrator.pace_delivery moved to the delivery's slot under its subscription's rate limit
   * (db/functions/pace_delivery.sql): the generation of the subscription's pacing the slot belongs to. While
   * it is still the subscription's, the slot is this job's, which only waits for the last attempt to be
   * 1/rate old; after a change of the limit the job takes a turn anew.
   */
  pacing_generation?: number;
}

/**
 * An event's deliveries, sent by one job (integrator.queue_delivery_jobs queues it): each is sent as a
 * deliver_webhook job would send it, while it still has `attempts` attempts (0: none yet).
 */
export interface DeliverWebhooksPayload extends CarriedTraceContext {
  tenant_id: string;
  delivery_ids: string[];
  attempts: number;
}

/**
 * Queued when a listen session starts (db/webhooks/listen-sessions.ts), for when it ends unless polled; the
 * task ends it then, or queues itself again for the session's new end.
 */
export interface EndListenSessionPayload {
  tenant_id: string;
  session_id: string;
}

/** Scheduled by the crontab; graphile-worker's cron adds `_cron` details, which the task ignores. */
export type PurgeIdempotencyKeysPayload = Record<string, unknown>;

/** Scheduled by the crontab, like purge_idempotency_keys. */
export type PurgeWebhookDeliveriesPayload = Record<string, unknown>;

declare global {
  // graphile-worker's documented way to type task payloads is this global interface.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace GraphileWorker {
    interface Tasks {
      deliver_webhook: DeliverWebhookPayload;
      deliver_webhooks: DeliverWebhooksPayload;
      end_listen_session: EndListenSessionPayload;
      purge_idempotency_keys: PurgeIdempotencyKeysPayload;
      purge_webhook_deliveries: PurgeWebhookDeliveriesPayload;
    }
  }
}

export type JobName = keyof GraphileWorker.Tasks;

/** The identifiers, for code that names a job (db/functions/queue_delivery_jobs.sql writes the same text). */
export const JOB = {
  deliverWebhook: "deliver_webhook",
  deliverWebhooks: "deliver_webhooks",
  endListenSession: "end_listen_session",
  purgeIdempotencyKeys: "purge_idempotency_keys",
  purgeWebhookDeliveries: "purge_webhook_deliveries",
} as const satisfies Record<string, JobName>;

/** An object naming a tenant by uuid: what every delivery job's payload is first of all. */
function namesTenant(value: unknown): value is { tenant_id: string } & Record<string, unknown> {
  const candidate = value as { tenant_id?: unknown } | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.tenant_id === "string" &&
    isUuid(candidate.tenant_id)
  );
}

const isUuidText = (value: unknown): boolean => typeof value === "string" && isUuid(value);
const isAttemptCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * A deliver_webhook payload as it arrives: anything sharing the database can queue jobs, so the task
 * checks the declared shape before trusting it.
 */
export function isDeliverWebhookPayload(value: unknown): value is DeliverWebhookPayload {
  return (
    namesTenant(value) &&
    isUuidText(value.delivery_id) &&
    (value.attempts === undefined || isAttemptCount(value.attempts)) &&
    (value.pacing_generation === undefined || isAttemptCount(value.pacing_generation))
  );
}

/** A deliver_webhooks payload as it arrives, checked like a deliver_webhook one. */
export function isDeliverWebhooksPayload(value: unknown): value is DeliverWebhooksPayload {
  return (
    namesTenant(value) &&
    Array.isArray(value.delivery_ids) &&
    value.delivery_ids.length > 0 &&
    value.delivery_ids.every(isUuidText) &&
    isAttemptCount(value.attempts)
  );
}

/** An end_listen_session payload as it arrives, checked like the delivery jobs' payloads. */
export function isEndListenSessionPayload(value: unknown): value is EndListenSessionPayload {
  return namesTenant(value) && isUuidText(value.session_id);
}
