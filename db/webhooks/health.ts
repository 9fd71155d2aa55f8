// An endpoint's health as the API and the portal show it (WebhookSubscriptionHealth): how its newest attempts
// of the last 24 hours went, read from the attempt history (integrator.webhook_delivery_attempts, by the
// index on tenant, subscription and time), whatever the attempts carried. It only reports: the worker's
// rules that disable a subscription are integrator.record_delivery_attempt's.
import type { Knex } from "knex";
import type { components } from "../../generated/openapi.ts";
import { rfc3339OrNull } from "../timestamps.ts";

export type SubscriptionHealth = components["schemas"]["WebhookSubscriptionHealth"];

/** How far back an attempt counts. */
export const HEALTH_WINDOW_HOURS = 24;
/** The most attempts counted: the newest ones of the window. */
export const HEALTH_SAMPLE = 100;
/** The share of delivered attempts, in percent, at or above which an endpoint whose newest attempt was delivered is `healthy`. */
export const HEALTHY_PERCENT = 95;

/** The health of an endpoint with no attempt in the window (a new subscription's). */
export const NO_RECENT_ATTEMPTS: SubscriptionHealth = {
  status: "unknown",
  attempts: 0,
  delivered: 0,
  delivered_percent: null,
  last_attempt_at: null,
  last_outcome: null,
  last_response_code: null,
};

interface HealthRow {
  subscription_id: string;
  attempts: number;
  delivered: number;
  last_attempt_at: Date | null;
  last_outcome: "delivered" | "failed" | null;
  last_response_code: number | null;
}

/** The figure and its status from the counts (WebhookSubscriptionHealth's rules). */
export function healthOf(row: Omit<HealthRow, "subscription_id">): SubscriptionHealth {
  if (row.attempts === 0 || row.last_outcome === null) return NO_RECENT_ATTEMPTS;
  const percent = Math.floor((row.delivered * 100) / row.attempts);
  return {
    status: row.last_outcome === "failed" ? "failing" : percent >= HEALTHY_PERCENT ? "healthy" : "degraded",
    attempts: row.attempts,
    delivered: row.delivered,
    delivered_percent: percent,
    last_attempt_at: rfc3339OrNull(row.last_attempt_at),
    last_outcome: row.last_outcome,
    last_response_code: row.last_response_code,
  };
}

/**
 * The statement that reads the health of the tenant's subscriptions named: for each, its newest
 * HEALTH_SAMPLE attempts of the last HEALTH_WINDOW_HOURS, by the index on tenant, subscription and time.
 */
export function healthQuery(
  db: Knex,
  tenantId: string,
  subscriptionIds: readonly string[],
): Knex.Raw<{ rows: HealthRow[] }> {
  return db.raw<{ rows: HealthRow[] }>(
    `select s.id as subscription_id, h.attempts, h.delivered, h.last_attempt_at, h.last_outcome, h.last_response_code
       from unnest(?::uuid[]) as s(id)
       cross join lateral (
         select count(*)::integer as attempts,
                (count(*) filter (where recent.outcome = 'delivered'))::integer as delivered,
                max(recent.attempted_at) as last_attempt_at,
                (array_agg(recent.outcome order by recent.attempted_at desc, recent.delivery_id desc, recent.number desc))[1] as last_outcome,
                (array_agg(recent.response_code order by recent.attempted_at desc, recent.delivery_id desc, recent.number desc))[1] as last_response_code
           from (select a.outcome, a.response_code, a.attempted_at, a.delivery_id, a.number
                   from integrator.webhook_delivery_attempts a
                  where a.tenant_id = ? and a.subscription_id = s.id
                    and a.attempted_at > now() - make_interval(hours => ?)
                  order by a.attempted_at desc
                  limit ?) recent
       ) h`,
    [[...subscriptionIds], tenantId, HEALTH_WINDOW_HOURS, HEALTH_SAMPLE],
  );
}

/** The health of each of the tenant's subscriptions named, in one statement; one without attempts is NO_RECENT_ATTEMPTS. */
export async function subscriptionsHealth(
  db: Knex,
  tenantId: string,
  subscriptionIds: readonly string[],
): Promise<Map<string, SubscriptionHealth>> {
  const health = new Map<string, SubscriptionHealth>();
  if (subscriptionIds.length === 0) return health;
  const { rows } = await healthQuery(db, tenantId, subscriptionIds);
  for (const row of rows) health.set(row.subscription_id, healthOf(row));
  return health;
}
