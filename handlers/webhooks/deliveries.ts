// The delivery log of the token's tenant: its pages, newest first, and one delivery with its attempts.
import { notFound } from "../../http/errors.ts";
import { principalOf, type OperationHandler } from "../../http/operations.ts";
import { RequestValidationError, valueError } from "../../http/validation.ts";
import { findDeliveryWithAttempts, listDeliveries } from "../../db/webhooks/deliveries.ts";
import { decodeCursor, encodeCursor } from "../../http/keyset-cursor.ts";
import { eventUuidOf } from "../../db/events.ts";

const DEFAULT_DELIVERIES_LIMIT = 50;

/** The UUID of the `event_id` filter (its pattern is the document's, checked before the handler runs). */
function eventUuidOfQuery(eventId: string): string {
  const eventUuid = eventUuidOf(eventId);
  if (eventUuid === undefined)
    throw new RequestValidationError([valueError(["query", "event_id"], "event_id is not an event id", eventId)]);
  return eventUuid;
}

export const listWebhookDeliveries: OperationHandler<"listWebhookDeliveries"> = async ({
  query,
  principal,
  services,
}) => {
  const limit = query.limit === undefined ? DEFAULT_DELIVERIES_LIMIT : Number(query.limit);
  const page = await listDeliveries(services.db, principalOf({ principal }).tenantId, {
    limit,
    ...(query.cursor === undefined ? {} : { after: decodeCursor(query.cursor) }),
    ...(query.subscription_id === undefined ? {} : { subscriptionId: query.subscription_id }),
    ...(query.status === undefined ? {} : { status: query.status }),
    ...(query.event_type === undefined ? {} : { eventType: query.event_type }),
    ...(query.event_id === undefined ? {} : { eventId: eventUuidOfQuery(query.event_id) }),
    ...(query.created_after === undefined ? {} : { createdAfter: query.created_after }),
    ...(query.created_before === undefined ? {} : { createdBefore: query.created_before }),
  });
  return {
    status: 200,
    body: {
      deliveries: page.deliveries,
      total: page.total,
      next_cursor: page.next === null ? null : encodeCursor(page.next),
    },
  };
};

export const getWebhookDelivery: OperationHandler<"getWebhookDelivery"> = async ({ params, principal, services }) => {
  const found = await findDeliveryWithAttempts(services.db, principalOf({ principal }).tenantId, params.delivery_id);
  if (!found) throw notFound("Webhook delivery");
  return { status: 200, body: found };
};
