// Webhook subscriptions and deliveries: the queries of the webhook operations and of the
// deliver_webhook task. Every query is scoped by tenant_id, which leads every key (decisions §10).
import type { Knex } from "knex";
import type { components } from "../generated/openapi.ts";
import type { AnyEventEnvelope, EventSelector } from "./events.ts";
import { isUuid } from "./ids.ts";
import { JOB, deliveryJobKey } from "./jobs.ts";
import { rfc3339, rfc3339OrNull } from "./timestamps.ts";

type Schemas = components["schemas"];
/** A subscription as the API shows it; the secret is never read back. */
export type SubscriptionView = Omit<Schemas["WebhookSubscriptionResponse"], "secret">;
export type DeliveryView = Schemas["WebhookDeliveryResponse"];
export type DeliveryStatus = Schemas["WebhookDeliveryStatus"];

/** graphile-worker's own retries of the job cover only unexpected errors (a database outage); send failures are retried by the task. */
const JOB_MAX_ATTEMPTS = 10;

export const DEACTIVATED_MESSAGE = "Subscription deactivated; the delivery was not sent";

interface SubscriptionRow {
  tenant_id: string;
  id: string;
  url: string;
  events: EventSelector[];
  is_active: boolean;
  created_by: string;
  created_at: Date;
}

interface DeliveryRow {
  id: string;
  subscription_id: string;
  event_type: string;
  payload: AnyEventEnvelope;
  status: DeliveryStatus;
  attempts: number;
  last_attempt_at: Date | null;
  response_code: number | null;
  error_message: string | null;
  created_at: Date;
}

const SUBSCRIPTION_COLUMNS = ["tenant_id", "id", "url", "events", "is_active", "created_by", "created_at"];
const DELIVERY_COLUMNS = [
  "id",
  "subscription_id",
  "event_type",
  "payload",
  "status",
  "attempts",
  "last_attempt_at",
  "response_code",
  "error_message",
  "created_at",
];

function subscriptionView(row: SubscriptionRow): SubscriptionView {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    url: row.url,
    events: row.events,
    is_active: row.is_active,
    created_by: row.created_by,
    created_at: rfc3339(row.created_at),
  };
}

function deliveryView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    subscription_id: row.subscription_id,
    event_type: row.event_type,
    payload: row.payload,
    status: row.status,
    attempts: row.attempts,
    last_attempt_at: rfc3339OrNull(row.last_attempt_at),
    response_code: row.response_code,
    error_message: row.error_message,
    created_at: rfc3339(row.created_at),
  };
}

export async function createSubscription(
  db: Knex,
  input: { tenantId: string; url: string; events: EventSelector[]; secretSealed: string; createdBy: string },
): Promise<SubscriptionView> {
  const [row] = (await db("integrator.webhook_subscriptions")
    .insert({
      tenant_id: input.tenantId,
      url: input.url,
      events: input.events,
      secret_encrypted: input.secretSealed,
      created_by: input.createdBy,
    })
    .returning(SUBSCRIPTION_COLUMNS)) as SubscriptionRow[];
  return subscriptionView(row as SubscriptionRow);
}

export async function listActiveSubscriptions(db: Knex, tenantId: string): Promise<SubscriptionView[]> {
  const rows = await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, is_active: true })
    .orderBy([{ column: "created_at" }, { column: "id" }])
    .select(SUBSCRIPTION_COLUMNS);
  return (rows as SubscriptionRow[]).map(subscriptionView);
}

/**
 * Deactivates the subscription and fails its pending deliveries (they are not sent again).
 * False when the tenant has no subscription with that id; true also when it was already inactive.
 */
export async function deactivateSubscription(db: Knex, tenantId: string, subscriptionId: string): Promise<boolean> {
  if (!isUuid(subscriptionId)) return false;
  return db.transaction(async (trx) => {
    const updated = await trx("integrator.webhook_subscriptions")
      .where({ tenant_id: tenantId, id: subscriptionId })
      .update({ is_active: false, deactivated_at: trx.raw("coalesce(deactivated_at, now())") })
      .returning("id");
    if (updated.length === 0) return false;
    await trx("integrator.webhook_deliveries")
      .where({ tenant_id: tenantId, subscription_id: subscriptionId, status: "pending" })
      .update({ status: "failed", error_message: DEACTIVATED_MESSAGE, updated_at: trx.fn.now() });
    return true;
  });
}

/** The tenant's newest deliveries (created_at, then id, descending) and the count of all of them. */
export async function listDeliveries(
  db: Knex,
  tenantId: string,
  limit: number,
): Promise<{ deliveries: DeliveryView[]; total: number }> {
  const [rows, counted] = await Promise.all([
    db("integrator.webhook_deliveries")
      .where({ tenant_id: tenantId })
      .orderBy([
        { column: "created_at", order: "desc" },
        { column: "id", order: "desc" },
      ])
      .limit(limit)
      .select(DELIVERY_COLUMNS),
    db("integrator.webhook_deliveries").where({ tenant_id: tenantId }).count<{ count: number }[]>("* as count"),
  ]);
  return { deliveries: (rows as DeliveryRow[]).map(deliveryView), total: Number(counted[0]?.count ?? 0) };
}

/** What the deliver_webhook task needs: the delivery's state and payload and its subscription's target. */
export interface DeliveryToSend {
  id: string;
  tenant_id: string;
  event_type: string;
  payload: AnyEventEnvelope;
  status: DeliveryStatus;
  attempts: number;
  url: string;
  subscription_active: boolean;
  secret_encrypted: string;
}

export async function findDeliveryToSend(
  db: Knex,
  tenantId: string,
  deliveryId: string,
): Promise<DeliveryToSend | undefined> {
  return db("integrator.webhook_deliveries as d")
    .join("integrator.webhook_subscriptions as s", function joinSubscription() {
      this.on("s.tenant_id", "=", "d.tenant_id").andOn("s.id", "=", "d.subscription_id");
    })
    .where({ "d.tenant_id": tenantId, "d.id": deliveryId })
    .first(
      "d.id",
      "d.tenant_id",
      "d.event_type",
      "d.payload",
      "d.status",
      "d.attempts",
      "s.url",
      "s.is_active as subscription_active",
      "s.secret_encrypted",
    );
}

export interface AttemptRecord {
  tenantId: string;
  deliveryId: string;
  /** The delivery's attempts before this one: the record applies only if no one else recorded it first. */
  attemptsBefore: number;
  attemptedAt: Date;
  status: DeliveryStatus;
  responseCode: number | null;
  errorMessage: string | null;
  /** When set (status pending), the next attempt's job is queued for then, in the same statement. */
  retryAt?: Date;
}

/**
 * Records one attempt's outcome and, for a failure with attempts left, queues the next attempt's job
 * in the same statement (so both happen or neither). False when the delivery had moved on (final,
 * or this attempt already recorded by another run), in which case nothing is written.
 */
export async function recordAttempt(db: Knex, attempt: AttemptRecord): Promise<boolean> {
  const payload: GraphileWorker.Tasks["deliver_webhook"] = {
    tenant_id: attempt.tenantId,
    delivery_id: attempt.deliveryId,
  };
  // The running job holds the delivery's key; add_job moves the key to the new job and the running
  // one simply completes, so graphile-worker's own backoff never drives the schedule.
  const result = await db.raw<{ rows: { id: string }[] }>(
    `with recorded as (
       update integrator.webhook_deliveries
          set status = ?, attempts = attempts + 1, last_attempt_at = ?, response_code = ?, error_message = ?, updated_at = now()
        where tenant_id = ? and id = ? and status = 'pending' and attempts = ?
       returning id
     )
     select id, case when ?::timestamptz is not null
                     then (graphile_worker.add_job(?, ?::json, run_at => ?::timestamptz, max_attempts => ?, job_key => ?)).id
                end as next_job_id
       from recorded`,
    [
      attempt.status,
      attempt.attemptedAt,
      attempt.responseCode,
      attempt.errorMessage === null ? null : attempt.errorMessage.slice(0, 500),
      attempt.tenantId,
      attempt.deliveryId,
      attempt.attemptsBefore,
      attempt.retryAt ?? null,
      JOB.deliverWebhook,
      JSON.stringify(payload),
      attempt.retryAt ?? null,
      JOB_MAX_ATTEMPTS,
      deliveryJobKey(attempt.deliveryId),
    ],
  );
  return result.rows.length > 0;
}

/** Ends a pending delivery as failed without an attempt (its subscription is inactive). */
export async function failWithoutAttempt(
  db: Knex,
  tenantId: string,
  deliveryId: string,
  message: string,
): Promise<boolean> {
  const updated = await db("integrator.webhook_deliveries")
    .where({ tenant_id: tenantId, id: deliveryId, status: "pending" })
    .update({ status: "failed", error_message: message.slice(0, 500), updated_at: db.fn.now() })
    .returning("id");
  return updated.length > 0;
}
