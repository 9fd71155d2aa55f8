// The deliveries list, one delivery with its attempts, and manual deliveries (test events and
// redeliveries), each scoped by tenant_id.
import type { Knex } from "knex";
import { isUuid } from "../ids.ts";
import { rfc3339 } from "../timestamps.ts";
import { newestFirstPage, pageOf, type Keyset, type KeysetPageRequest } from "../keyset.ts";
import {
  type AttemptView,
  DELIVERY_COLUMNS,
  type DeliveredEventKind,
  type DeliveryEnvelope,
  type DeliveryRow,
  type DeliveryStatus,
  type DeliveryView,
  deliveryView,
} from "./views.ts";

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
