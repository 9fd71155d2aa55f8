// Every job the worker runs, declared once: its identifier and its payload type (graphile-worker's
// typed task list, GraphileWorker.Tasks). Producers (integrator.queue_delivery_jobs's SQL, called by
// emit_event and db/webhooks.ts; the crontab) and the tasks in worker/tasks use these names; worker/tasks/index.ts must map every one.
import type {} from "graphile-worker";
import { isUuid } from "./ids.ts";

export interface DeliverWebhookPayload {
  tenant_id: string;
  delivery_id: string;
  /**
   * The delivery's attempts when the job was queued (migration 0021): the job sends only while the
   * delivery still has that many. Jobs queued before 0021 had none (and a job key instead); 0022 gave
   * those still queued their delivery's attempts. One queued by hand without it is sent as before.
   */
  attempts?: number;
}

/**
 * An event's deliveries, sent by one job (migration 0023): each is sent as a deliver_webhook job would
 * send it, while it still has `attempts` attempts (0: none yet).
 */
export interface DeliverWebhooksPayload {
  tenant_id: string;
  delivery_ids: string[];
  attempts: number;
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
      purge_idempotency_keys: PurgeIdempotencyKeysPayload;
      purge_webhook_deliveries: PurgeWebhookDeliveriesPayload;
    }
  }
}

export type JobName = keyof GraphileWorker.Tasks;

/** The identifiers, for code that names a job (the migration that defines queue_delivery_jobs, 0016, uses the same text). */
export const JOB = {
  deliverWebhook: "deliver_webhook",
  deliverWebhooks: "deliver_webhooks",
  purgeIdempotencyKeys: "purge_idempotency_keys",
  purgeWebhookDeliveries: "purge_webhook_deliveries",
} as const satisfies Record<string, JobName>;

/**
 * A deliver_webhook payload as it arrives: anything sharing the database can queue jobs, so the task
 * checks the declared shape before trusting it.
 */
export function isDeliverWebhookPayload(value: unknown): value is DeliverWebhookPayload {
  const candidate = value as Partial<DeliverWebhookPayload> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.tenant_id === "string" &&
    typeof candidate.delivery_id === "string" &&
    isUuid(candidate.tenant_id) &&
    isUuid(candidate.delivery_id) &&
    (candidate.attempts === undefined || (Number.isSafeInteger(candidate.attempts) && candidate.attempts >= 0))
  );
}

/** A deliver_webhooks payload as it arrives, checked like a deliver_webhook one. */
export function isDeliverWebhooksPayload(value: unknown): value is DeliverWebhooksPayload {
  const candidate = value as Partial<DeliverWebhooksPayload> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.tenant_id === "string" &&
    isUuid(candidate.tenant_id) &&
    Array.isArray(candidate.delivery_ids) &&
    candidate.delivery_ids.length > 0 &&
    candidate.delivery_ids.every((id) => typeof id === "string" && isUuid(id)) &&
    Number.isSafeInteger(candidate.attempts) &&
    (candidate.attempts as number) >= 0
  );
}
