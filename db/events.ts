// Lifecycle events: the kinds a tenant can subscribe to and the data each kind carries (identifiers and
// status only), both generated from the document's top-level `webhooks` section into
// generated/event-kinds.ts and taken from here by the rest of the service, and emitEvent, the one
// TypeScript entry to integrator.emit_event. Call it with the transaction that writes the change the
// event reports: the deliveries and their jobs then exist exactly when that change does.
import type { Knex } from "knex";
import { runPrepared } from "./prepared.ts";
import type { components } from "../generated/openapi.ts";
import { EVENT_KINDS, type EventDataByKind, type EventKind } from "../generated/event-kinds.ts";

export { EVENT_KINDS, type EventDataByKind, type EventKind };

export type EventSelector = components["schemas"]["WebhookEventSelector"];

/** The body of a delivery of an event of kind K, exactly as stored and sent. */
export interface EventEnvelope<K extends EventKind = EventKind> {
  /** The event's id (`evt_` and a UUID), sent as webhook-id. */
  id: string;
  event: K;
  tenant_id: string;
  /** RFC 3339 in UTC with milliseconds and Z, set when the event is emitted. */
  timestamp: string;
  data: EventDataByKind[K];
}

/** The body of a delivery of any kind, as a union told apart by `event` (the document's WebhookEventPayload). */
export type AnyEventEnvelope = { [K in EventKind]: EventEnvelope<K> }[EventKind];

const EVENT_ID = /^evt_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** An event's id as the API and the envelope show it: `evt_` and the UUID it is stored as. */
export function eventIdOf(uuid: string): string {
  return `evt_${uuid}`;
}

/** The UUID an event id (`evt_…`) stands for; undefined when the text is not an event id. */
export function eventUuidOf(eventId: string): string | undefined {
  return EVENT_ID.exec(eventId)?.[1];
}

export function isEventKind(value: unknown): value is EventKind {
  return typeof value === "string" && (EVENT_KINDS as readonly string[]).includes(value);
}

/**
 * Queues one pending delivery for every active subscription of the tenant that matches `kind`, and their job
 * (a deliver_webhook job for one, one deliver_webhooks job for several), inside `db` — pass the caller's
 * transaction. Returns the number of deliveries. The database rejects an unknown kind and data that does not
 * match the kind's fields (unknown, missing or mistyped fields) with an error, which rolls the caller's
 * transaction back.
 */
export async function emitEvent<K extends EventKind>(
  db: Knex | Knex.Transaction,
  tenantId: string,
  kind: K,
  data: EventDataByKind[K],
): Promise<number> {
  const result = await runPrepared<{ deliveries: number }>(
    db,
    "emit_event",
    "select integrator.emit_event(?::uuid, ?, ?::jsonb) as deliveries",
    [tenantId, kind, JSON.stringify(data)],
  );
  return result.rows[0]?.deliveries ?? 0;
}
