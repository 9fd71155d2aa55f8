// Webhooks: the operations of the webhooks tag, bound by operationId; each concern's rules are in the
// file beside this one that exports its handlers.
export {
  createWebhookSubscription,
  updateWebhookSubscription,
  listWebhookSubscriptions,
  getWebhookSubscription,
  enableWebhookSubscription,
  disableWebhookSubscription,
  rotateWebhookSecret,
  deleteWebhookSubscription,
} from "./subscriptions.ts";
export { sendWebhookTestEvent, redeliverWebhookDelivery } from "./manual-sends.ts";
export { listWebhookDeliveries, getWebhookDelivery } from "./deliveries.ts";
export { createWebhookPortalSession, refreshWebhookPortalSession } from "./portal-sessions.ts";
export { getEvent, listEvents } from "./events.ts";
export {
  createWebhookListenSession,
  deleteWebhookListenSession,
  pollWebhookListenSession,
  reportWebhookListenAnswer,
} from "./listen-sessions.ts";
