// Webhook subscriptions: create, list, find, change, enable, disable, rotate and deactivate, each scoped
// by tenant_id, which leads every key (docs/decisions.md §10). These are the tenant's HTTPS endpoints
// (transport 'https'); its listen sessions, rows of the same table, are db/webhooks/listen-sessions.ts's.
import type { Knex } from "knex";
import { type EventSelector } from "../events.ts";
import { isUuid } from "../ids.ts";
import {
  DEACTIVATED,
  unsentMessageSql,
  SUBSCRIPTION_COLUMNS,
  type SubscriptionRow,
  type SubscriptionView,
  subscriptionView,
} from "./views.ts";
import { NO_RECENT_ATTEMPTS, subscriptionsHealth } from "./health.ts";

/** The rows as the API shows them, each with its endpoint's health, read in one statement. */
async function viewsOf(db: Knex, tenantId: string, rows: readonly SubscriptionRow[]): Promise<SubscriptionView[]> {
  const health = await subscriptionsHealth(
    db,
    tenantId,
    rows.map((row) => row.id),
  );
  return rows.map((row) => subscriptionView(row, health.get(row.id) ?? NO_RECENT_ATTEMPTS));
}

async function viewOf(db: Knex, tenantId: string, row: SubscriptionRow): Promise<SubscriptionView> {
  const [view] = await viewsOf(db, tenantId, [row]);
  if (!view) throw new Error("viewsOf returns one view per row");
  return view;
}

/** The rows these functions address: HTTPS subscriptions, not listen sessions. */
const HTTPS = { transport: "https" } as const;

/**
 * Serialises a tenant's subscription changes and listen session starts (each limit is a count, checked and
 * kept under this lock).
 */
export async function lockTenantSubscriptions(trx: Knex.Transaction, tenantId: string): Promise<void> {
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
  const query = trx("integrator.webhook_subscriptions").where({ tenant_id: tenantId, is_active: true, url, ...HTTPS });
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
    const active = () =>
      trx("integrator.webhook_subscriptions").where({ tenant_id: input.tenantId, is_active: true, ...HTTPS });
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
    // A new subscription has had no attempt.
    return subscriptionView(row, NO_RECENT_ATTEMPTS);
  });
}

export async function listActiveSubscriptions(db: Knex, tenantId: string): Promise<SubscriptionView[]> {
  const rows = await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, is_active: true, ...HTTPS })
    .orderBy([{ column: "created_at" }, { column: "id" }])
    .select(SUBSCRIPTION_COLUMNS);
  return viewsOf(db, tenantId, rows as SubscriptionRow[]);
}

/** One subscription of the tenant that is not deleted (active or disabled); undefined otherwise. */
export async function findSubscription(
  db: Knex,
  tenantId: string,
  subscriptionId: string,
): Promise<SubscriptionView | undefined> {
  if (!isUuid(subscriptionId)) return undefined;
  const row = (await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, id: subscriptionId, is_active: true, ...HTTPS })
    .first(SUBSCRIPTION_COLUMNS)) as SubscriptionRow | undefined;
  return row ? viewOf(db, tenantId, row) : undefined;
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
    .where({ tenant_id: tenantId, id: subscriptionId, is_active: true, ...HTTPS })
    .update(changes)
    .returning(SUBSCRIPTION_COLUMNS)) as SubscriptionRow[];
  return row ? viewOf(db, tenantId, row) : undefined;
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
      .where({ tenant_id: input.tenantId, id: input.subscriptionId, is_active: true, ...HTTPS })
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
    return { before: subscriptionView(current, changed.health), after: changed };
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
      .where({ tenant_id: tenantId, id: subscriptionId, ...HTTPS })
      .update({ is_active: false, deactivated_at: trx.raw("coalesce(deactivated_at, now())") })
      .returning("id");
    if (updated.length === 0) return false;
    await trx("integrator.webhook_deliveries")
      .where({ tenant_id: tenantId, subscription_id: subscriptionId, status: "pending" })
      .update({
        status: "failed",
        error_message: unsentMessageSql(trx, DEACTIVATED),
        next_attempt_at: null,
        updated_at: trx.fn.now(),
      });
    return true;
  });
}
