// The portal's one door to the API: every call goes through the contract package's typed client
// (openapi/package, openapi-fetch over the generated types), with the portal credential as the bearer token.
import { createIntegratorClient, type components, type paths } from "../openapi/package/src/index.ts";

export type Subscription = components["schemas"]["WebhookSubscription"];
export type Delivery = components["schemas"]["WebhookDeliveryResponse"];
export type EventKind = components["schemas"]["WebhookEventKind"];
export type EventSelector = components["schemas"]["WebhookEventSelector"];
/** An endpoint as its form holds it: the URL, the events, the description and the rate limit (null for none). */
export type EndpointInput = Required<components["schemas"]["WebhookSubscriptionUpdateRequest"]>;

/** One thing the service refused in a request: the body field it concerns (its first key, when there is one) and why. */
export interface RefusedField {
  field: string | undefined;
  message: string;
}

/** A refused or failed call: the HTTP status (0 when the network failed) and the service's error code. */
export class ApiFailure extends Error {
  readonly status: number;
  readonly code: string;
  /** What a 422 in FastAPI's shape named, one entry per violation (none for other failures). */
  readonly issues: RefusedField[];
  constructor(status: number, code: string, message: string, issues: RefusedField[] = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.issues = issues;
  }
}

interface ErrorBody {
  error?: { code?: string; message?: string };
  detail?: { loc?: unknown[]; msg?: string }[];
}

/**
 * A violation's message as a person reads it: pydantic's "Value error, " (which the service keeps for
 * FastAPI-compatible clients) says nothing to a person and is left out.
 */
export function readableMessage(msg: string | undefined): string {
  return (msg ?? "invalid value").replace(/^Value error, /, "");
}

function failure(response: Response, body: unknown): ApiFailure {
  const error = (body ?? {}) as ErrorBody;
  if (error.error?.code) return new ApiFailure(response.status, error.error.code, error.error.message ?? "");
  if (Array.isArray(error.detail)) {
    const issues = error.detail.map((issue): RefusedField => ({
      field: issue.loc?.[0] === "body" && typeof issue.loc[1] === "string" ? issue.loc[1] : undefined,
      message: readableMessage(issue.msg),
    }));
    return new ApiFailure(
      response.status,
      "VALIDATION_FAILED",
      issues.map((issue) => issue.message).join("; "),
      issues,
    );
  }
  return new ApiFailure(response.status, "HTTP_" + String(response.status), response.statusText);
}

async function settle<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch {
    throw new ApiFailure(0, "NETWORK", "The service could not be reached");
  }
  if (!result.response.ok) throw failure(result.response, result.error);
  return result.data as T;
}

export type DeliveryFilters = NonNullable<paths["/v1/webhooks/deliveries"]["get"]["parameters"]["query"]>;
export type DeliveryDetail = components["schemas"]["WebhookDeliveryDetailResponse"];
export type Attempt = components["schemas"]["WebhookDeliveryAttempt"];
export type DeliveredEventKind = components["schemas"]["WebhookDeliveredEventKind"];

/** `token` is read at each call: a refreshed session's credential is used from then on. */
export function portalApi(token: () => string, baseUrl = window.location.origin) {
  // A refusal is shown at once with a button to try again, rather than waited out behind a spinner.
  const client = createIntegratorClient({ baseUrl, token, retry: false });
  const subscription = (id: string) => ({ params: { path: { subscription_id: id } } });
  const delivery = (id: string) => ({ params: { path: { delivery_id: id } } });
  return {
    listSubscriptions: () => settle(client.GET("/v1/webhooks/subscriptions")),
    createSubscription: (endpoint: EndpointInput) =>
      settle(client.POST("/v1/webhooks/subscriptions", { body: endpoint })),
    /** Changes the endpoint in place (its status and secret stay as they are). */
    updateSubscription: (id: string, endpoint: EndpointInput) =>
      settle(client.PATCH("/v1/webhooks/subscriptions/{subscription_id}", { ...subscription(id), body: endpoint })),
    deleteSubscription: (id: string) =>
      settle(client.DELETE("/v1/webhooks/subscriptions/{subscription_id}", subscription(id))),
    /** Disables by hand; a blank reason is sent as none. */
    disableSubscription: (id: string, reason: string) =>
      settle(
        client.POST("/v1/webhooks/subscriptions/{subscription_id}/disable", {
          ...subscription(id),
          body: reason.trim() === "" ? {} : { reason: reason.trim() },
        }),
      ),
    enableSubscription: (id: string) =>
      settle(client.POST("/v1/webhooks/subscriptions/{subscription_id}/enable", subscription(id))),
    rotateSecret: (id: string) =>
      settle(client.POST("/v1/webhooks/subscriptions/{subscription_id}/rotate-secret", subscription(id))),
    /** A webhook.test event, or with `kind` the document's example event of that kind. */
    sendTestEvent: (id: string, kind?: EventKind) =>
      settle(
        client.POST("/v1/webhooks/subscriptions/{subscription_id}/test", {
          ...subscription(id),
          ...(kind ? { body: { event_type: kind } } : {}),
        }),
      ),
    listDeliveries: (query: DeliveryFilters) => settle(client.GET("/v1/webhooks/deliveries", { params: { query } })),
    getDelivery: (id: string) => settle(client.GET("/v1/webhooks/deliveries/{delivery_id}", delivery(id))),
    redeliver: (id: string) => settle(client.POST("/v1/webhooks/deliveries/{delivery_id}/redeliver", delivery(id))),
    /** The tenant (its name) as the service reads the portal credential. */
    me: () => settle(client.GET("/v1/me")),
    /** A new credential for this session, valid for another PORTAL_SESSION_TTL_MINUTES. */
    refreshSession: () => settle(client.POST("/v1/webhooks/portal-sessions/refresh")),
  };
}

export type PortalApi = ReturnType<typeof portalApi>;
