// The events list and one event with its deliveries, scoped by tenant_id.
import type { Knex } from "knex";
import { eventIdOf } from "../events.ts";
import { rfc3339 } from "../timestamps.ts";
import { newestFirstPage, pageOf, type Keyset, type KeysetPageRequest } from "../keyset.ts";
import {
  type DeliveredEventKind,
  type DeliveryEnvelope,
  type DeliveryRow,
  type DeliveryView,
  type EventView,
  deliveryView,
} from "./views.ts";
import { deliveriesPageQuery } from "./deliveries.ts";

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
