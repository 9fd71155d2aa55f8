// Webhook subscriptions and deliveries: the queries of the webhook operations, of the deliver_webhook
// task and of the retention purge. Every query is scoped by tenant_id, which leads every key (docs/decisions.md §10).
import type { Knex } from "knex";
import { runPrepared } from "./prepared.ts";
import type { components } from "../generated/openapi.ts";
import { eventIdOf, type EventSelector } from "./events.ts";
import { isUuid } from "./ids.ts";
import { rfc3339, rfc3339OrNull } from "./timestamps.ts";
import { newestFirstPage, pageOf, type Keyset, type KeysetPageRequest } from "./keyset.ts";
import { runPreparedWithTrace, WITH_TRACE_CONTEXT, type TraceContext } from "./trace-context.ts";

type Schemas = components["schemas"];
/** A subscription as the API shows it; the secret is never read back. */
export type SubscriptionView = Omit<Schemas["WebhookSubscriptionResponse"], "secret">;
export type DeliveryView = Schemas["WebhookDeliveryResponse"];
export type EventView = Schemas["WebhookEventResponse"];
export type DeliveryStatus = Schemas["WebhookDeliveryStatus"];
export type DeliveryOrigin = Schemas["WebhookDeliveryOrigin"];
export type DeliveredEventKind = Schemas["WebhookDeliveredEventKind"];
/** The body of a delivery: one schema per kind, told apart by `event` (WebhookEventPayload). */
export type DeliveryEnvelope = Schemas["WebhookEventPayload"];
export type AttemptView = Schemas["WebhookDeliveryAttempt"];
export type AttemptErrorClass = Schemas["WebhookDeliveryErrorClass"];

export const DEACTIVATED_MESSAGE = "Subscription deactivated; the delivery was not sent";
export const DISABLED_MESSAGE = "Subscription disabled by endpoint health; the delivery was not sent";
export const MANUALLY_DISABLED_MESSAGE = "Subscription disabled by hand; the delivery was not sent";

interface SubscriptionRow {
  tenant_id: string;
  id: string;
  url: string;
  events: EventSelector[];
  description: string | null;
  rate_limit_per_second: number | null;
  is_active: boolean;
  created_by: string;
  created_at: Date;
  disabled_at: Date | null;
  disabled_reason: string | null;
  previous_secret_expires_at: Date | null;
}

interface DeliveryRow {
  id: string;
  subscription_id: string;
  /** The event's UUID (shown as `evt_…`). */
  event_id: string;
  event_type: DeliveredEventKind;
  payload: DeliveryEnvelope;
  status: DeliveryStatus;
  attempts: number;
  last_attempt_at: Date | null;
  /** When the next attempt is due; meaningful while pending only. */
  next_attempt_at: Date | null;
  response_code: number | null;
  error_message: string | null;
  created_at: Date;
  origin: DeliveryOrigin;
  redelivery_of: string | null;
}

const SUBSCRIPTION_COLUMNS = [
  "tenant_id",
  "id",
  "url",
  "events",
  "description",
  "rate_limit_per_second",
  "is_active",
  "created_by",
  "created_at",
  "disabled_at",
  "disabled_reason",
  "previous_secret_expires_at",
];
const DELIVERY_COLUMNS = [
  "id",
  "subscription_id",
  "event_id",
  "event_type",
  "payload",
  "status",
  "attempts",
  "last_attempt_at",
  "next_attempt_at",
  "response_code",
  "error_message",
  "created_at",
  "origin",
  "redelivery_of",
];

function subscriptionView(row: SubscriptionRow): SubscriptionView {
  const overlapOpen = row.previous_secret_expires_at !== null && row.previous_secret_expires_at.getTime() > Date.now();
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    url: row.url,
    events: row.events,
    description: row.description,
    rate_limit_per_second: row.rate_limit_per_second,
    is_active: row.is_active,
    created_by: row.created_by,
    created_at: rfc3339(row.created_at),
    status: row.disabled_at === null ? "active" : "disabled",
    disabled_at: rfc3339OrNull(row.disabled_at),
    disabled_reason: row.disabled_reason,
    previous_secret_expires_at: overlapOpen ? rfc3339OrNull(row.previous_secret_expires_at) : null,
  };
}

function deliveryView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    subscription_id: row.subscription_id,
    event_id: eventIdOf(row.event_id),
    event_type: row.event_type,
    payload: row.payload,
    status: row.status,
    attempts: row.attempts,
    last_attempt_at: rfc3339OrNull(row.last_attempt_at),
    // A final delivery has no next attempt, whoever made it final (an attempt, a deactivation, the task).
    next_attempt_at: row.status === "pending" ? rfc3339OrNull(row.next_attempt_at) : null,
    response_code: row.response_code,
    error_message: row.error_message,
    created_at: rfc3339(row.created_at),
    origin: row.origin,
    redelivery_of: row.redelivery_of,
  };
}

/** Serialises a tenant's subscription changes (the limit is a count, checked and kept under this lock). */
async function lockTenantSubscriptions(trx: Knex.Transaction, tenantId: string): Promise<void> {
  await trx.raw("select pg_advisory_xact_lock(hashtextextended(?, 0))", [`webhook_subscriptions:${tenantId}`]);
}

/**
 * Why a subscription was not created or changed: the tenant's limit, or another of its subscriptions that is
 * not deleted with the same URL.
 */
export class SubscriptionRefused extends Error {
  override name = "SubscriptionRefused";
  readonly refusal: { reason: "duplicate_url"; subscriptionId: string } | { reason: "limit"; limit: number };
  constructor(refusal: SubscriptionRefused["refusal"]) {
    super(refusal.reason === "limit" ? `subscription limit ${refusal.limit} reached` : "duplicate subscription URL");
    this.refusal = refusal;
  }
}

/**
 * The one-per-URL rule: throws SubscriptionRefused when another of the tenant's subscriptions that is not
 * deleted (than `exceptId`) has this URL. Read under lockTenantSubscriptions, so it holds under concurrency.
 */
async function refuseDuplicateUrl(
  trx: Knex.Transaction,
  tenantId: string,
  url: string,
  exceptId?: string,
): Promise<void> {
  const query = trx("integrator.webhook_subscriptions").where({ tenant_id: tenantId, is_active: true, url });
  if (exceptId !== undefined) query.andWhereNot({ id: exceptId });
  const duplicate = await query.first<{ id: string } | undefined>("id");
  if (duplicate) throw new SubscriptionRefused({ reason: "duplicate_url", subscriptionId: duplicate.id });
}

/**
 * Creates a subscription, or throws SubscriptionRefused when the tenant already has one with this URL that
 * is not deleted, or already holds `maxActive` of them (no limit when undefined: operator tooling).
 * Race-free: the count is read under a per-tenant lock, and the unique partial index
 * webhook_subscriptions_active_url refuses a second active row with the same URL in any case.
 */
export async function createSubscription(
  db: Knex,
  input: {
    tenantId: string;
    url: string;
    events: EventSelector[];
    description?: string | null;
    rateLimitPerSecond?: number | null;
    secretSealed: string;
    createdBy: string;
    maxActive?: number;
  },
): Promise<SubscriptionView> {
  return db.transaction(async (trx) => {
    await lockTenantSubscriptions(trx, input.tenantId);
    const active = () => trx("integrator.webhook_subscriptions").where({ tenant_id: input.tenantId, is_active: true });
    await refuseDuplicateUrl(trx, input.tenantId, input.url);
    if (input.maxActive !== undefined) {
      const [counted] = await active().count<{ count: number }[]>("* as count");
      if (Number(counted?.count ?? 0) >= input.maxActive)
        throw new SubscriptionRefused({ reason: "limit", limit: input.maxActive });
    }
    const rows = (await trx("integrator.webhook_subscriptions")
      .insert({
        tenant_id: input.tenantId,
        url: input.url,
        events: input.events,
        description: input.description ?? null,
        rate_limit_per_second: input.rateLimitPerSecond ?? null,
        secret_encrypted: input.secretSealed,
        created_by: input.createdBy,
      })
      .onConflict(trx.raw("(tenant_id, url) where is_active"))
      .ignore()
      .returning(SUBSCRIPTION_COLUMNS)) as SubscriptionRow[];
    const [row] = rows;
    if (!row) {
      const existing = await active().andWhere({ url: input.url }).first<{ id: string }>("id");
      throw new SubscriptionRefused({ reason: "duplicate_url", subscriptionId: existing.id });
    }
    return subscriptionView(row);
  });
}

export async function listActiveSubscriptions(db: Knex, tenantId: string): Promise<SubscriptionView[]> {
  const rows = await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, is_active: true })
    .orderBy([{ column: "created_at" }, { column: "id" }])
    .select(SUBSCRIPTION_COLUMNS);
  return (rows as SubscriptionRow[]).map(subscriptionView);
}

/** One subscription of the tenant that is not deleted (active or disabled); undefined otherwise. */
export async function findSubscription(
  db: Knex,
  tenantId: string,
  subscriptionId: string,
): Promise<SubscriptionView | undefined> {
  if (!isUuid(subscriptionId)) return undefined;
  const row = (await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, id: subscriptionId, is_active: true })
    .first(SUBSCRIPTION_COLUMNS)) as SubscriptionRow | undefined;
  return row ? subscriptionView(row) : undefined;
}

/** Applies `changes` to a subscription of the tenant that is not deleted; undefined when there is none. */
async function updateSubscription(
  db: Knex,
  tenantId: string,
  subscriptionId: string,
  changes: Record<string, unknown>,
): Promise<SubscriptionView | undefined> {
  if (!isUuid(subscriptionId)) return undefined;
  const [row] = (await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, id: subscriptionId, is_active: true })
    .update(changes)
    .returning(SUBSCRIPTION_COLUMNS)) as SubscriptionRow[];
  return row ? subscriptionView(row) : undefined;
}

/**
 * What updateWebhookSubscription may change; an absent field is left as it is, a null description clears it
 * and a null rate limit removes it.
 */
export interface SubscriptionChanges {
  url?: string;
  events?: EventSelector[];
  description?: string | null;
  rate_limit_per_second?: number | null;
}

/**
 * Changes a subscription of the tenant that is not deleted in place, and answers it as it was and as it is
 * now; undefined when there is none. Throws SubscriptionRefused (duplicate_url) when `url` is another of the
 * tenant's subscriptions' URL, under the lock createSubscription takes, so the rule holds under concurrency.
 * Its status, secret and failure history are left alone.
 */
export async function changeSubscription(
  db: Knex,
  input: { tenantId: string; subscriptionId: string; changes: SubscriptionChanges },
): Promise<{ before: SubscriptionView; after: SubscriptionView } | undefined> {
  if (!isUuid(input.subscriptionId)) return undefined;
  const { url, events, description, rate_limit_per_second } = input.changes;
  return db.transaction(async (trx) => {
    await lockTenantSubscriptions(trx, input.tenantId);
    const current = (await trx("integrator.webhook_subscriptions")
      .where({ tenant_id: input.tenantId, id: input.subscriptionId, is_active: true })
      .forUpdate()
      .first(SUBSCRIPTION_COLUMNS)) as SubscriptionRow | undefined;
    if (!current) return undefined;
    if (url !== undefined) await refuseDuplicateUrl(trx, input.tenantId, url, current.id);
    // A new limit (or none) applies to the deliveries already waiting for their turn under the old one.
    if (rate_limit_per_second !== undefined && rate_limit_per_second !== current.rate_limit_per_second)
      await trx.raw("select integrator.reset_delivery_pacing(?::uuid, ?::uuid)", [input.tenantId, current.id]);
    const changed = await updateSubscription(trx, input.tenantId, current.id, {
      ...(url === undefined ? {} : { url }),
      ...(events === undefined ? {} : { events }),
      ...(description === undefined ? {} : { description }),
      ...(rate_limit_per_second === undefined ? {} : { rate_limit_per_second }),
    });
    if (!changed) return undefined;
    return { before: subscriptionView(current), after: changed };
  });
}

/**
 * Re-enables a disabled subscription (by endpoint health or by hand), with a fresh failure history;
 * undefined when it does not exist (or is deleted).
 */
export async function enableSubscription(
  db: Knex,
  tenantId: string,
  subscriptionId: string,
): Promise<SubscriptionView | undefined> {
  return updateSubscription(db, tenantId, subscriptionId, {
    disabled_at: null,
    disabled_reason: null,
    disabled_by: null,
    consecutive_failed_deliveries: 0,
    failing_since: null,
  });
}

/**
 * Disables an active subscription by hand with `reason`; a disabled one (by hand or by endpoint health)
 * keeps its time and reason. The failure history is left as it is: enabling starts it afresh. Undefined
 * when it does not exist (or is deleted).
 */
export async function disableSubscriptionByHand(
  db: Knex,
  tenantId: string,
  subscriptionId: string,
  reason: string,
): Promise<SubscriptionView | undefined> {
  // The right-hand sides of an UPDATE read the row as it was, so all three agree on "was it active".
  return updateSubscription(db, tenantId, subscriptionId, {
    disabled_at: db.raw("coalesce(disabled_at, now())"),
    disabled_reason: db.raw("case when disabled_at is null then ? else disabled_reason end", [reason.slice(0, 500)]),
    disabled_by: db.raw("case when disabled_at is null then 'manual' else disabled_by end"),
  });
}

/**
 * Makes `secretSealed` the subscription's secret; the one it replaces keeps signing beside it for
 * `overlapHours` (none when 0). A secret replaced earlier stops signing now. Undefined when the
 * subscription does not exist (or is deleted).
 */
export async function rotateSubscriptionSecret(
  db: Knex,
  input: { tenantId: string; subscriptionId: string; secretSealed: string; overlapHours: number },
): Promise<SubscriptionView | undefined> {
  const overlap = input.overlapHours > 0;
  return updateSubscription(db, input.tenantId, input.subscriptionId, {
    previous_secret_encrypted: overlap ? db.raw("secret_encrypted") : null,
    previous_secret_expires_at: overlap
      ? db.raw("now() + make_interval(secs => ?)", [input.overlapHours * 3600])
      : null,
    secret_encrypted: input.secretSealed,
  });
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
      .update({
        status: "failed",
        error_message: DEACTIVATED_MESSAGE,
        next_attempt_at: null,
        updated_at: trx.fn.now(),
      });
    return true;
  });
}

// ---------------------------------------------------------------- the deliveries list

export interface DeliveryPageRequest extends KeysetPageRequest {
  subscriptionId?: string;
  status?: DeliveryStatus;
  eventType?: DeliveredEventKind;
  /** The event's UUID. */
  eventId?: string;
}

/**
 * The page query: keyset on (created_at, id) descending, so each filter is one range scan of an index
 * leading with tenant_id (webhook_deliveries_newest, _by_subscription, _by_status, _by_event, _by_event_id) and the
 * cost of a page does not depend on how many deliveries exist. Exported for the EXPLAIN test.
 */
export function deliveriesPageQuery(db: Knex, tenantId: string, page: DeliveryPageRequest): Knex.QueryBuilder {
  const query = db("integrator.webhook_deliveries").where({ tenant_id: tenantId });
  if (page.subscriptionId !== undefined) query.andWhere({ subscription_id: page.subscriptionId });
  if (page.status !== undefined) query.andWhere({ status: page.status });
  if (page.eventType !== undefined) query.andWhere({ event_type: page.eventType });
  if (page.eventId !== undefined) query.andWhere({ event_id: page.eventId });
  return newestFirstPage(db, query, page, DELIVERY_COLUMNS);
}

/** The tenant's exact delivery count: the sum of its counter rows (kept by triggers on every insert and delete of deliveries). */
export async function countDeliveries(db: Knex, tenantId: string): Promise<number> {
  const [row] = await db("integrator.webhook_delivery_counts")
    .where({ tenant_id: tenantId })
    .sum<{ total: number | string | null }[]>("deliveries as total");
  return Number(row?.total ?? 0);
}

/** A page of the tenant's deliveries, newest first, the key of the next page (or null) and the exact total. */
export async function listDeliveries(
  db: Knex,
  tenantId: string,
  page: DeliveryPageRequest,
): Promise<{ deliveries: DeliveryView[]; total: number; next: Keyset | null }> {
  const [rows, total] = await Promise.all([
    deliveriesPageQuery(db, tenantId, page) as Promise<(DeliveryRow & { created_at_key: string })[]>,
    countDeliveries(db, tenantId),
  ]);
  const { shown, next } = pageOf(rows, page.limit);
  return { deliveries: shown.map(deliveryView), total, next };
}

/** One delivery of the tenant with every attempt, oldest first; undefined when the tenant has none with that id. */
export async function findDeliveryWithAttempts(
  db: Knex,
  tenantId: string,
  deliveryId: string,
): Promise<{ delivery: DeliveryView; attempts: AttemptView[] } | undefined> {
  if (!isUuid(deliveryId)) return undefined;
  const row = (await db("integrator.webhook_deliveries")
    .where({ tenant_id: tenantId, id: deliveryId })
    .first(DELIVERY_COLUMNS)) as DeliveryRow | undefined;
  if (!row) return undefined;
  const attempts = (await db("integrator.webhook_delivery_attempts")
    .where({ tenant_id: tenantId, delivery_id: deliveryId })
    .orderBy("number")
    .select(
      "number",
      "attempted_at",
      "duration_ms",
      "outcome",
      "response_code",
      "error_class",
      "error_message",
      "request_headers",
      "response_headers",
      "response_body",
      "response_body_truncated",
    )) as (Omit<AttemptView, "attempted_at"> & { attempted_at: Date })[];
  return {
    delivery: deliveryView(row),
    attempts: attempts.map((attempt) => ({ ...attempt, attempted_at: rfc3339(attempt.attempted_at) })),
  };
}

/** A delivery of the tenant and the state of its subscription, for a redelivery. */
export async function findDeliveryForRedelivery(
  db: Knex,
  tenantId: string,
  deliveryId: string,
): Promise<
  { delivery: DeliveryView; eventUuid: string; subscriptionState: "active" | "disabled" | "deleted" } | undefined
> {
  if (!isUuid(deliveryId)) return undefined;
  const row = (await db("integrator.webhook_deliveries as d")
    .join("integrator.webhook_subscriptions as s", function joinSubscription() {
      this.on("s.tenant_id", "=", "d.tenant_id").andOn("s.id", "=", "d.subscription_id");
    })
    .where({ "d.tenant_id": tenantId, "d.id": deliveryId })
    .first([...DELIVERY_COLUMNS.map((column) => `d.${column}`), "s.is_active", "s.disabled_at"])) as
    (DeliveryRow & { is_active: boolean; disabled_at: Date | null }) | undefined;
  if (!row) return undefined;
  const subscriptionState = !row.is_active ? "deleted" : row.disabled_at === null ? "active" : "disabled";
  return { delivery: deliveryView(row), eventUuid: row.event_id, subscriptionState };
}

export type ManualDeliveryOutcome = { queued: DeliveryView } | { retryAfterSeconds: number };

/**
 * Queues a redelivery or a test delivery with its job and counts it, unless its bucket (the tenant's own
 * callers, or one portal link) already asked for `perMinute` manual sends in the last 60 seconds. The count
 * is read under a lock per tenant and bucket, so concurrent requests (on any replica) cannot overshoot it. A redelivery belongs to the event of the
 * delivery it resends; a test is an event of its own, recorded here with its delivery.
 */
export async function queueManualDelivery(
  db: Knex,
  input: {
    tenantId: string;
    subscriptionId: string;
    eventType: DeliveredEventKind;
    payload: DeliveryEnvelope;
    origin: "redelivery" | "test";
    redeliveryOf: string | null;
    /** The UUID of the event the delivery carries (the payload's `id` is `evt_` and it). */
    eventUuid: string;
    perMinute: number;
    /** The bucket the send counts in: null for the tenant's own callers, a portal link's key for its holder. */
    bucket: string | null;
  },
): Promise<ManualDeliveryOutcome> {
  return db.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(hashtextextended(?, 0))", [
      `webhook_manual_sends:${input.tenantId}:${input.bucket ?? ""}`,
    ]);
    const window = await trx.raw<{ rows: { sent: number; retry_after: number | null }[] }>(
      `select count(*)::int as sent,
              ceil(extract(epoch from (min(created_at) + interval '60 seconds' - clock_timestamp())))::int as retry_after
         from integrator.webhook_deliveries
        where tenant_id = ? and origin <> 'event' and created_at > clock_timestamp() - interval '60 seconds'
          and manual_send_bucket is not distinct from ?`,
      [input.tenantId, input.bucket],
    );
    const recent = window.rows[0];
    if (recent && recent.sent >= input.perMinute) return { retryAfterSeconds: Math.max(1, recent.retry_after ?? 1) };
    if (input.origin === "test")
      await trx("integrator.webhook_events").insert({
        tenant_id: input.tenantId,
        id: input.eventUuid,
        event_type: input.eventType,
        payload: JSON.stringify(input.payload),
        created_at: trx.raw("clock_timestamp()"),
      });
    const [row] = (await trx("integrator.webhook_deliveries")
      .insert({
        tenant_id: input.tenantId,
        subscription_id: input.subscriptionId,
        event_id: input.eventUuid,
        event_type: input.eventType,
        payload: JSON.stringify(input.payload),
        origin: input.origin,
        redelivery_of: input.redeliveryOf,
        manual_send_bucket: input.bucket,
        created_at: trx.raw("clock_timestamp()"),
        next_attempt_at: trx.raw("clock_timestamp()"),
      })
      .returning(DELIVERY_COLUMNS)) as DeliveryRow[];
    if (!row) throw new Error("the delivery insert returned no row");
    // Queued like every delivery job, with the tenant's backlog rank and flag (queue_delivery_jobs.sql).
    await trx.raw(
      "select integrator.queue_delivery_jobs(?::uuid, array[?::uuid], integrator.delivery_backlog(?::uuid))",
      [input.tenantId, row.id, input.tenantId],
    );
    return { queued: deliveryView(row) };
  });
}

// ---------------------------------------------------------------- the events

interface EventRow {
  id: string;
  event_type: DeliveredEventKind;
  payload: DeliveryEnvelope;
  created_at: Date;
}

const EVENT_COLUMNS = ["id", "event_type", "payload", "created_at"];

function eventView(row: EventRow): EventView {
  return { id: eventIdOf(row.id), type: row.event_type, created_at: rfc3339(row.created_at), payload: row.payload };
}

export interface EventPageRequest extends KeysetPageRequest {
  type?: string;
}

/**
 * The events page query: keyset on (created_at, id) descending over webhook_events_newest, or
 * webhook_events_by_type with a kind, so a page costs the same however many events exist. Exported for
 * the EXPLAIN test.
 */
export function eventsPageQuery(db: Knex, tenantId: string, page: EventPageRequest): Knex.QueryBuilder {
  const query = db("integrator.webhook_events").where({ tenant_id: tenantId });
  if (page.type !== undefined) query.andWhere({ event_type: page.type });
  return newestFirstPage(db, query, page, EVENT_COLUMNS);
}

/** A page of the tenant's events, newest first, and the key of the next page (or null). */
export async function listEvents(
  db: Knex,
  tenantId: string,
  page: EventPageRequest,
): Promise<{ events: EventView[]; next: Keyset | null }> {
  const rows = (await eventsPageQuery(db, tenantId, page)) as (EventRow & { created_at_key: string })[];
  const { shown, next } = pageOf(rows, page.limit);
  return { events: shown.map(eventView), next };
}

/**
 * One event of the tenant and the first page (newest first, at most `limit`) of its deliveries, with the
 * key of the next page of the deliveries list filtered by the event; undefined when the tenant has no
 * event with that UUID.
 */
export async function findEventWithDeliveries(
  db: Knex,
  tenantId: string,
  eventUuid: string,
  limit: number,
): Promise<{ event: EventView; deliveries: DeliveryView[]; next: Keyset | null } | undefined> {
  const [row, rows] = await Promise.all([
    db("integrator.webhook_events").where({ tenant_id: tenantId, id: eventUuid }).first(EVENT_COLUMNS) as Promise<
      EventRow | undefined
    >,
    deliveriesPageQuery(db, tenantId, { limit, eventId: eventUuid }) as Promise<
      (DeliveryRow & { created_at_key: string })[]
    >,
  ]);
  if (!row) return undefined;
  const { shown, next } = pageOf(rows, limit);
  return { event: eventView(row), deliveries: shown.map(deliveryView), next };
}

// ---------------------------------------------------------------- the deliver_webhook task

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
  url: string;
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

/** Ends a pending delivery as failed without an attempt (its subscription is inactive or disabled). */
export async function failWithoutAttempt(
  db: Knex,
  tenantId: string,
  deliveryId: string,
  message: string,
): Promise<boolean> {
  const updated = await db("integrator.webhook_deliveries")
    .where({ tenant_id: tenantId, id: deliveryId, status: "pending" })
    .update({ status: "failed", error_message: message.slice(0, 500), next_attempt_at: null, updated_at: db.fn.now() })
    .returning("id");
  return updated.length > 0;
}

// ---------------------------------------------------------------- retention

/**
 * Deletes at most `batchSize` of the tenant's final deliveries created more than `retentionDays` ago
 * (their attempts go with them; the count trigger lowers the tenant's total) in one short statement. Rows
 * another transaction holds are skipped, not waited for. Pending deliveries are never purged.
 * Returns how many were deleted.
 */
export async function purgeDeliveriesBatch(
  db: Knex,
  tenantId: string,
  retentionDays: number,
  batchSize: number,
): Promise<number> {
  const result = await db.raw<{ rows: { purged: number }[] }>(
    `with doomed as (
       select id from integrator.webhook_deliveries
        where tenant_id = ? and created_at < now() - make_interval(days => ?) and status <> 'pending'
        order by created_at, id
        limit ?
        for update skip locked
     ),
     deleted as (
       delete from integrator.webhook_deliveries d using doomed
        where d.tenant_id = ? and d.id = doomed.id
       returning d.id
     )
     select count(*)::int as purged from deleted`,
    [tenantId, retentionDays, batchSize, tenantId],
  );
  return result.rows[0]?.purged ?? 0;
}

/**
 * Deletes at most `batchSize` of the tenant's events created more than `retentionDays` ago of which no
 * delivery is left (run after purgeDeliveriesBatch: an event goes with the last of its deliveries, and
 * stays while a resend of it is kept). Rows another transaction holds are skipped. Returns how many.
 */
export async function purgeEventsBatch(
  db: Knex,
  tenantId: string,
  retentionDays: number,
  batchSize: number,
): Promise<number> {
  const result = await db.raw<{ rows: { purged: number }[] }>(
    `with doomed as (
       select e.id from integrator.webhook_events e
        where e.tenant_id = ? and e.created_at < now() - make_interval(days => ?)
          and not exists (select 1 from integrator.webhook_deliveries d
                           where d.tenant_id = e.tenant_id and d.event_id = e.id)
        order by e.created_at, e.id
        limit ?
        for update skip locked
     ),
     deleted as (
       delete from integrator.webhook_events e using doomed
        where e.tenant_id = ? and e.id = doomed.id
       returning e.id
     )
     select count(*)::int as purged from deleted`,
    [tenantId, retentionDays, batchSize, tenantId],
  );
  return result.rows[0]?.purged ?? 0;
}
