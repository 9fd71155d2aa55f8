// What the webhook queries answer with: the API's views of subscriptions, deliveries, events and
// attempts (the generated schemas), and how a row becomes one.
import type { Knex } from "knex";
import type { components } from "../../generated/openapi.ts";
import { eventIdOf, type EventSelector } from "../events.ts";
import { rfc3339, rfc3339OrNull } from "../timestamps.ts";
import type { SubscriptionHealth } from "./health.ts";

type Schemas = components["schemas"];
/** A subscription as the API shows it; the secret is never read back. */
export type SubscriptionView = Schemas["WebhookSubscription"];
export type DeliveryView = Schemas["WebhookDeliveryResponse"];
export type EventView = Schemas["WebhookEventResponse"];
export type DeliveryStatus = Schemas["WebhookDeliveryStatus"];
export type DeliveryOrigin = Schemas["WebhookDeliveryOrigin"];
export type DeliveredEventKind = Schemas["WebhookDeliveredEventKind"];
/** The body of a delivery: one schema per kind, told apart by `event` (WebhookEventPayload). */
export type DeliveryEnvelope = Schemas["WebhookEventPayload"];
export type AttemptView = Schemas["WebhookDeliveryAttempt"];
export type AttemptErrorClass = Schemas["WebhookDeliveryErrorClass"];

/**
 * Why a pending delivery ended without a further attempt, as its error_message: the reason, then "the
 * delivery was not sent" for one never attempted, or "was not sent again" after failed attempts.
 */
export interface UnsentReason {
  notSent: string;
  notSentAgain: string;
}

export function unsentReason(reason: string): UnsentReason {
  return {
    notSent: `${reason}; the delivery was not sent`,
    notSentAgain: `${reason}; the delivery was not sent again`,
  };
}

export const DEACTIVATED = unsentReason("Subscription deactivated");
export const DISABLED = unsentReason("Subscription disabled by endpoint health");
export const MANUALLY_DISABLED = unsentReason("Subscription disabled by hand");

/** The message of a statement that ends deliveries, chosen by each row's own attempts. */
export function unsentMessageSql(db: Knex, reason: UnsentReason): Knex.Raw {
  return db.raw("case when attempts = 0 then ? else ? end", [reason.notSent, reason.notSentAgain]);
}

export interface SubscriptionRow {
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

export interface DeliveryRow {
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

export const SUBSCRIPTION_COLUMNS = [
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
export const DELIVERY_COLUMNS = [
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

/** A subscription row as the API shows it, with its endpoint's health (db/webhooks/health.ts). */
export function subscriptionView(row: SubscriptionRow, health: SubscriptionHealth): SubscriptionView {
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
    health,
  };
}

export function deliveryView(row: DeliveryRow): DeliveryView {
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
