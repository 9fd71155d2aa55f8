// Webhook subscriptions: create, change, list, get, enable, disable, rotate the secret and delete, under
// the URL and events rules. Every change is an audit action written in the change's own transaction, with
// the caller's subject as actor (`portal:<subject>` through a portal link) and the ids it touched.
import type { Knex } from "knex";
import { newWebhookSecret } from "../../foundation/signing.ts";
import { ApiError, notFound } from "../../http/errors.ts";
import { principalOf, type OperationHandler } from "../../http/operations.ts";
import { checkWebhookUrl } from "../../foundation/url-safety.ts";
import { RequestValidationError, valueError } from "../../http/validation.ts";
import {
  changeSubscription,
  createSubscription,
  deactivateSubscription,
  disableSubscriptionByHand,
  enableSubscription,
  findSubscription,
  listActiveSubscriptions,
  rotateSubscriptionSecret,
  SubscriptionRefused,
  type SubscriptionChanges,
} from "../../db/webhooks/subscriptions.ts";
import { type SubscriptionView } from "../../db/webhooks/views.ts";
import { recordAudit } from "../../db/audit.ts";
import type { Principal } from "../../foundation/auth/tokens.ts";
import type { EventSelector } from "../../db/events.ts";
import type { Services } from "../../foundation/services.ts";

/** One audit action of a webhook change, in the change's transaction. */
export function auditChange(
  trx: Knex,
  caller: Principal,
  requestId: string,
  action: string,
  resource: { type: "webhook_subscription" | "webhook_delivery"; id: string },
  details?: Record<string, unknown>,
): Promise<void> {
  return recordAudit(trx, {
    tenantId: caller.tenantId,
    action: `webhooks.${action}`,
    actor: caller.subject,
    resourceType: resource.type,
    resourceId: resource.id,
    requestId,
    ...(details === undefined ? {} : { details }),
  });
}

export const subscriptionDisabled = (): ApiError =>
  new ApiError("WEBHOOK_SUBSCRIPTION_DISABLED", "The webhook subscription is disabled; enable it first");

/**
 * The URL rules of a subscription's `url`, at creation and on change: the canonical spelling it is stored
 * in, or a 422 value_error at ["body", "url"] naming the rule it breaks.
 */
function subscriptionUrl(url: string, services: Services): string {
  const verdict = checkWebhookUrl(url, { allowedPorts: services.config.webhooks.allowedPorts });
  if (!verdict.ok) throw new RequestValidationError([valueError(["body", "url"], verdict.message, url)]);
  // Stored in its one spelling, so that the one-per-URL rule compares URLs, not their spellings.
  return verdict.canonical;
}

/** A subscription's `events` as stored: as given, without duplicates. */
const subscriptionEvents = (events: EventSelector[]): EventSelector[] => [...new Set(events)];

/** The answer to a refused creation or change: the tenant's limit, or the URL of another subscription. */
function refusalAnswer(error: unknown): unknown {
  if (!(error instanceof SubscriptionRefused)) return error;
  const { refusal } = error;
  if (refusal.reason === "limit")
    return new ApiError(
      "WEBHOOK_SUBSCRIPTION_LIMIT_REACHED",
      `This tenant already has ${refusal.limit} webhook subscriptions, the most allowed`,
      { details: { limit: refusal.limit } },
    );
  return new ApiError("WEBHOOK_SUBSCRIPTION_DUPLICATE_URL", "A webhook subscription with this URL already exists", {
    details: { subscription_id: refusal.subscriptionId },
  });
}

export const createWebhookSubscription: OperationHandler<"createWebhookSubscription"> = async ({
  body,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const url = subscriptionUrl(body.url, services);
  const secret = newWebhookSecret();
  try {
    const subscription = await services.db.transaction(async (trx) => {
      const created = await createSubscription(trx, {
        tenantId: caller.tenantId,
        url,
        events: subscriptionEvents(body.events),
        description: body.description ?? null,
        rateLimitPerSecond: body.rate_limit_per_second ?? null,
        secretSealed: services.secretBox.seal(secret),
        createdBy: caller.subject,
        maxActive: services.config.webhooks.maxSubscriptionsPerTenant,
      });
      await auditChange(
        trx,
        caller,
        requestId,
        "subscription_created",
        { type: "webhook_subscription", id: created.id },
        {
          url: created.url,
          events: created.events,
          ...(created.description === null ? {} : { description: created.description }),
          ...(created.rate_limit_per_second === null ? {} : { rate_limit_per_second: created.rate_limit_per_second }),
        },
      );
      return created;
    });
    return { status: 201, body: { ...subscription, secret } };
  } catch (error) {
    throw refusalAnswer(error);
  }
};

/** The fields a change altered, each with its previous and new value (the secret is never one of them). */
function changedFields(before: SubscriptionView, after: SubscriptionView): Record<string, unknown> {
  const changed: Record<string, { from: unknown; to: unknown }> = {};
  for (const field of ["url", "events", "description", "rate_limit_per_second"] as const)
    if (JSON.stringify(before[field]) !== JSON.stringify(after[field]))
      changed[field] = { from: before[field], to: after[field] };
  return { changed: Object.keys(changed), ...changed };
}

export const updateWebhookSubscription: OperationHandler<"updateWebhookSubscription"> = async ({
  body,
  params,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const changes: SubscriptionChanges = {
    ...(body.url === undefined ? {} : { url: subscriptionUrl(body.url, services) }),
    ...(body.events === undefined ? {} : { events: subscriptionEvents(body.events) }),
    ...(body.description === undefined ? {} : { description: body.description }),
    ...(body.rate_limit_per_second === undefined ? {} : { rate_limit_per_second: body.rate_limit_per_second }),
  };
  try {
    const subscription = await services.db.transaction(async (trx) => {
      const changed = await changeSubscription(trx, {
        tenantId: caller.tenantId,
        subscriptionId: params.subscription_id,
        changes,
      });
      if (!changed) return undefined;
      await auditChange(
        trx,
        caller,
        requestId,
        "subscription_updated",
        { type: "webhook_subscription", id: changed.after.id },
        changedFields(changed.before, changed.after),
      );
      return changed.after;
    });
    if (!subscription) throw notFound("Webhook subscription");
    return { status: 200, body: subscription };
  } catch (error) {
    throw refusalAnswer(error);
  }
};

export const listWebhookSubscriptions: OperationHandler<"listWebhookSubscriptions"> = async ({
  principal,
  services,
}) => {
  const subscriptions = await listActiveSubscriptions(services.db, principalOf({ principal }).tenantId);
  return { status: 200, body: { subscriptions, total: subscriptions.length } };
};

export const getWebhookSubscription: OperationHandler<"getWebhookSubscription"> = async ({
  params,
  principal,
  services,
}) => {
  const subscription = await findSubscription(services.db, principalOf({ principal }).tenantId, params.subscription_id);
  if (!subscription) throw notFound("Webhook subscription");
  return { status: 200, body: subscription };
};

export const enableWebhookSubscription: OperationHandler<"enableWebhookSubscription"> = async ({
  params,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const subscription = await services.db.transaction(async (trx) => {
    const enabled = await enableSubscription(trx, caller.tenantId, params.subscription_id);
    if (enabled)
      await auditChange(trx, caller, requestId, "subscription_enabled", {
        type: "webhook_subscription",
        id: enabled.id,
      });
    return enabled;
  });
  if (!subscription) throw notFound("Webhook subscription");
  return { status: 200, body: subscription };
};

/** `Disabled by hand`, and `: ` with the tenant's reason when it gives one (spaces alone are none). */
function disabledByHandReason(reason: string | undefined): string {
  const given = reason?.trim() ?? "";
  return given === "" ? "Disabled by hand" : `Disabled by hand: ${given}`;
}

export const disableWebhookSubscription: OperationHandler<"disableWebhookSubscription"> = async ({
  body,
  params,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const reason = disabledByHandReason(body?.reason);
  const subscription = await services.db.transaction(async (trx) => {
    const disabled = await disableSubscriptionByHand(trx, caller.tenantId, params.subscription_id, reason);
    if (disabled)
      await auditChange(
        trx,
        caller,
        requestId,
        "subscription_disabled",
        { type: "webhook_subscription", id: disabled.id },
        { reason },
      );
    return disabled;
  });
  if (!subscription) throw notFound("Webhook subscription");
  return { status: 200, body: subscription };
};

export const rotateWebhookSecret: OperationHandler<"rotateWebhookSecret"> = async ({
  params,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const secret = newWebhookSecret();
  const subscription = await services.db.transaction(async (trx) => {
    const rotated = await rotateSubscriptionSecret(trx, {
      tenantId: caller.tenantId,
      subscriptionId: params.subscription_id,
      secretSealed: services.secretBox.seal(secret),
      overlapHours: services.config.webhooks.secretRotationOverlapHours,
    });
    if (rotated)
      await auditChange(trx, caller, requestId, "secret_rotated", { type: "webhook_subscription", id: rotated.id });
    return rotated;
  });
  if (!subscription) throw notFound("Webhook subscription");
  return { status: 200, body: { ...subscription, secret } };
};

export const deleteWebhookSubscription: OperationHandler<"deleteWebhookSubscription"> = async ({
  params,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const found = await services.db.transaction(async (trx) => {
    const deactivated = await deactivateSubscription(trx, caller.tenantId, params.subscription_id);
    if (deactivated)
      await auditChange(trx, caller, requestId, "subscription_deleted", {
        type: "webhook_subscription",
        id: params.subscription_id.toLowerCase(),
      });
    return deactivated;
  });
  if (!found) throw notFound("Webhook subscription");
  return { status: 204, body: undefined };
};
