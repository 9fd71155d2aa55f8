// Manual sends: a test event (or an example of a kind) and a redelivery, each counted in the caller's
// bucket of manual sends (the tenant's own callers share one; each portal link has its own) and audited.
import { ApiError, notFound } from "../../http/errors.ts";
import { principalOf, type OperationHandler } from "../../http/operations.ts";
import { findSubscription } from "../../db/webhooks/subscriptions.ts";
import {
  findDeliveryForRedelivery,
  queueManualDelivery,
  type ManualDeliveryOutcome,
} from "../../db/webhooks/deliveries.ts";
import { rfc3339 } from "../../db/timestamps.ts";
import { examplePayload } from "./example-events.ts";
import { uuidV7 } from "../../db/ids.ts";
import { eventIdOf } from "../../db/events.ts";
import type { Principal } from "../../foundation/auth/tokens.ts";
import { auditChange, subscriptionDisabled } from "./subscriptions.ts";

const MANUAL_SENDS_WINDOW_SECONDS = 60;

/**
 * The bucket a caller's manual sends count in: null for the tenant's own callers (access tokens), and for a
 * portal link's holder that link (its session id, which its refreshed credentials keep; for a credential
 * made before links had one, its creator and session start), so a link cannot use up the tenant's.
 */
function manualSendBucket(caller: Principal): string | null {
  if (!caller.portal) return null;
  return `portal-link:${caller.portalSessionId ?? `${caller.subject}@${caller.portalSessionStartedAt ?? ""}`}`;
}

/** The queued delivery, or 429 RATE_LIMITED when the caller's bucket of manual sends is used up. */
function queuedOrLimited(outcome: ManualDeliveryOutcome, perMinute: number, caller: Principal) {
  if ("queued" in outcome) return outcome.queued;
  const wait = String(outcome.retryAfterSeconds);
  throw new ApiError(
    "RATE_LIMITED",
    `Too many redeliveries and test events${caller.portal ? " through this portal link" : ""}; retry after ${outcome.retryAfterSeconds} s`,
    {
      headers: { "Retry-After": wait },
      details: { scope: "webhook_manual_sends", limit: perMinute, window_seconds: MANUAL_SENDS_WINDOW_SECONDS },
    },
  );
}

export const sendWebhookTestEvent: OperationHandler<"sendWebhookTestEvent"> = async ({
  params,
  body,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const { tenantId } = caller;
  const subscription = await findSubscription(services.db, tenantId, params.subscription_id);
  if (!subscription) throw notFound("Webhook subscription");
  if (subscription.status === "disabled") throw subscriptionDisabled();
  const perMinute = services.config.webhooks.manualSendsPerMinute;
  const now = rfc3339(new Date());
  const kind = body?.event_type;
  // A test is an event of its own, marked `test: true` in its envelope (and so on the wire, worker/tasks/deliver_webhook.ts).
  const eventUuid = uuidV7();
  const id = eventIdOf(eventUuid);
  const outcome = await services.db.transaction(async (trx) => {
    const queued = await queueManualDelivery(trx, {
      tenantId,
      subscriptionId: subscription.id,
      eventType: kind ?? "webhook.test",
      eventUuid,
      payload: kind
        ? examplePayload(kind, id, tenantId, now)
        : {
            id,
            event: "webhook.test",
            tenant_id: tenantId,
            timestamp: now,
            data: { subscription_id: subscription.id },
            test: true,
          },
      origin: "test",
      redeliveryOf: null,
      perMinute,
      bucket: manualSendBucket(caller),
    });
    if ("queued" in queued)
      await auditChange(
        trx,
        caller,
        requestId,
        "test_event_sent",
        { type: "webhook_delivery", id: queued.queued.id },
        { subscription_id: subscription.id, ...(kind === undefined ? {} : { event_type: kind }) },
      );
    return queued;
  });
  return { status: 202, body: queuedOrLimited(outcome, perMinute, caller) };
};

export const redeliverWebhookDelivery: OperationHandler<"redeliverWebhookDelivery"> = async ({
  params,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const { tenantId } = caller;
  const found = await findDeliveryForRedelivery(services.db, tenantId, params.delivery_id);
  if (!found) throw notFound("Webhook delivery");
  if (found.subscriptionState === "deleted")
    throw new ApiError("WEBHOOK_SUBSCRIPTION_INACTIVE", "The delivery's webhook subscription was deleted");
  if (found.subscriptionState === "disabled") throw subscriptionDisabled();
  const perMinute = services.config.webhooks.manualSendsPerMinute;
  const outcome = await services.db.transaction(async (trx) => {
    const queued = await queueManualDelivery(trx, {
      tenantId,
      subscriptionId: found.delivery.subscription_id,
      eventType: found.delivery.payload.event,
      payload: found.delivery.payload,
      // The same event again: the same envelope, and the same webhook-id.
      eventUuid: found.eventUuid,
      origin: "redelivery",
      redeliveryOf: found.delivery.id,
      perMinute,
      bucket: manualSendBucket(caller),
    });
    if ("queued" in queued)
      await auditChange(
        trx,
        caller,
        requestId,
        "delivery_redelivered",
        { type: "webhook_delivery", id: queued.queued.id },
        { subscription_id: found.delivery.subscription_id, redelivery_of: found.delivery.id },
      );
    return queued;
  });
  return { status: 202, body: queuedOrLimited(outcome, perMinute, caller) };
};
