// Webhook subscriptions and the delivery log of the token's tenant.
import { randomBytes } from "node:crypto";
import { notFound } from "../../server/http/errors.ts";
import { principalOf, type OperationHandler } from "../../server/http/operations.ts";
import { checkWebhookUrl } from "../../server/url-safety.ts";
import { RequestValidationError, valueError } from "../../server/http/validation.ts";
import {
  createSubscription,
  deactivateSubscription,
  listActiveSubscriptions,
  listDeliveries,
} from "../../db/webhooks.ts";

const DEFAULT_DELIVERIES_LIMIT = 50;

/** `whsec_` and 32 random bytes in base64url: shown once, stored sealed. */
function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

export const createWebhookSubscription: OperationHandler<"createWebhookSubscription"> = async ({
  body,
  principal,
  services,
}) => {
  const caller = principalOf({ principal });
  const verdict = checkWebhookUrl(body.url);
  if (!verdict.ok) throw new RequestValidationError([valueError(["body", "url"], verdict.message, body.url)]);
  const secret = newSigningSecret();
  const subscription = await createSubscription(services.db, {
    tenantId: caller.tenantId,
    url: body.url,
    events: [...new Set(body.events)],
    secretSealed: services.secretBox.seal(secret),
    createdBy: caller.subject,
  });
  return { status: 201, body: { ...subscription, secret } };
};

export const listWebhookSubscriptions: OperationHandler<"listWebhookSubscriptions"> = async ({
  principal,
  services,
}) => {
  const subscriptions = await listActiveSubscriptions(services.db, principalOf({ principal }).tenantId);
  return { status: 200, body: { subscriptions, total: subscriptions.length } };
};

export const deleteWebhookSubscription: OperationHandler<"deleteWebhookSubscription"> = async ({
  params,
  principal,
  services,
}) => {
  const found = await deactivateSubscription(services.db, principalOf({ principal }).tenantId, params.subscription_id);
  if (!found) throw notFound("Webhook subscription");
  return { status: 204, body: undefined };
};

export const listWebhookDeliveries: OperationHandler<"listWebhookDeliveries"> = async ({
  query,
  principal,
  services,
}) => {
  const limit = query.limit === undefined ? DEFAULT_DELIVERIES_LIMIT : Number(query.limit);
  return { status: 200, body: await listDeliveries(services.db, principalOf({ principal }).tenantId, limit) };
};

export { createWebhookPortalSession } from "./portal-sessions.ts";
