// The tenant's events (docs/decisions.md §5): each event queued for at least one subscription, with its
// id (`evt_…`, the envelope's `id` and the webhook-id of its deliveries), and the deliveries it went to.
import { notFound } from "../../http/errors.ts";
import { principalOf, type OperationHandler } from "../../http/operations.ts";
import { eventUuidOf } from "../../db/events.ts";
import { findEventWithDeliveries, listEvents as listEventPage } from "../../db/webhooks/events.ts";
import { decodeCursor, encodeCursor } from "../../http/keyset-cursor.ts";

const DEFAULT_EVENTS_LIMIT = 50;
/** The deliveries getEvent shows; more are paged through listWebhookDeliveries with event_id. */
const EVENT_DELIVERIES_LIMIT = 200;

export const listEvents: OperationHandler<"listEvents"> = async ({ query, principal, services }) => {
  const page = await listEventPage(services.db, principalOf({ principal }).tenantId, {
    limit: query.limit === undefined ? DEFAULT_EVENTS_LIMIT : Number(query.limit),
    ...(query.cursor === undefined ? {} : { after: decodeCursor(query.cursor) }),
    ...(query.type === undefined ? {} : { type: query.type }),
    ...(query.created_after === undefined ? {} : { createdAfter: query.created_after }),
    ...(query.created_before === undefined ? {} : { createdBefore: query.created_before }),
  });
  return {
    status: 200,
    body: { events: page.events, next_cursor: page.next === null ? null : encodeCursor(page.next) },
  };
};

export const getEvent: OperationHandler<"getEvent"> = async ({ params, principal, services }) => {
  const eventUuid = eventUuidOf(params.event_id);
  const found =
    eventUuid === undefined
      ? undefined
      : await findEventWithDeliveries(
          services.db,
          principalOf({ principal }).tenantId,
          eventUuid,
          EVENT_DELIVERIES_LIMIT,
        );
  if (!found) throw notFound("Event");
  return {
    status: 200,
    body: {
      event: found.event,
      deliveries: found.deliveries,
      deliveries_next_cursor: found.next === null ? null : encodeCursor(found.next),
    },
  };
};
