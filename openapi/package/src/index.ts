// The SDK of the Integrator API: openapi-fetch over the types openapi-typescript generates from the document,
// with bearer tokens (a fixed one or a token provider), retries on 429 and 503 after `Retry-After`, an
// Idempotency-Key on every intake and partner-switch call, and webhook verification. Published in the
// contract package (openapi/package), which carries no server code; the repository's own tests and the
// portal import it from here.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, operations, paths, webhooks } from "../../../generated/openapi.ts";
import { retryingFetch, type Fetch, type RetryOptions } from "./retries.ts";

export type { components, operations, paths, webhooks };
export { retryAfterMilliseconds, type Fetch, type RetryNotice, type RetryOptions } from "./retries.ts";
export {
  createTokenProvider,
  TokenRequestError,
  type ClientCredentialsGrant,
  type PasswordGrant,
  type TokenProvider,
  type TokenProviderOptions,
} from "./token-provider.ts";
export { verifyWebhook, WebhookVerificationError, type WebhookEventPayload, type WebhookHeaders } from "./webhooks.ts";
export type {
  ApiError,
  CurrentPrincipal,
  HTTPValidationError,
  IntakeBatchItem,
  IntakeBatchRequest,
  IntakeItem,
  IntakeSubmission,
  IntakeSubmissionDetail,
  IntakeSubmitRequest,
  OAuthError,
  PartnerSwitchRequest,
  RoutingDecision,
  TokenResponse,
  ValidationError,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryDetail,
  WebhookEventRecord,
  WebhookSubscription,
  WebhookSubscriptionCreateRequest,
  WebhookSubscriptionUpdateRequest,
  WebhookSubscriptionWithSecret,
} from "./schemas.ts";

/**
 * Every schema of the document by name, e.g. `Schemas["IntakeSubmissionResponse"]`; the main bodies also have
 * names of their own (`IntakeSubmission`, `WebhookSubscription`, `ApiError`, ...: ./schemas.ts), which type
 * errors print instead of their structure.
 */
export type Schemas = components["schemas"];

/** The body of a delivery of each webhook event kind, e.g. `WebhookEvent<"intake.submitted">`. */
export type WebhookEvent<K extends keyof webhooks> = webhooks[K]["post"] extends {
  requestBody: { content: { "application/json": infer Body } };
}
  ? Body
  : never;

/**
 * A bearer token, or a function that returns the current one (called before every attempt), such as a
 * `createTokenProvider(...)`.
 */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

export interface IntegratorClientOptions {
  /** The service's base URL without a trailing slash or `/v1`, e.g. `https://integrator.example.com`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>` on every request when present. */
  token?: TokenSource | undefined;
  /** Headers sent with every request (e.g. `X-Request-Id`). */
  headers?: Record<string, string>;
  /**
   * Retries on 429 and 503 (and 409 `IDEMPOTENCY_IN_PROGRESS`, and network errors) after `Retry-After`, for
   * requests that are safe to repeat: GET, PUT, DELETE and calls with an Idempotency-Key. On by default
   * (3 attempts, waits up to 60 s); `false` sends every request once.
   */
  retry?: RetryOptions | false;
  /** A fetch of your own (proxies, tests); the global fetch by default. */
  fetch?: Fetch;
}

/** The client: `GET`, `POST`, `DELETE`, ... by path, typed by the document. */
export type IntegratorClient = Client<paths, "application/json">;

/**
 * The operations that take an Idempotency-Key (submitIntake, submitIntakeBatch, switchPartner): the client
 * sends a new key with each call that brings none, so that its retries cannot act twice.
 */
export const idempotentOperationPaths: readonly string[] = [
  "/v1/intake/submit",
  "/v1/intake/batch",
  "/v1/partner-switch",
];

/** A random version 4 UUID (crypto.getRandomValues also exists outside secure browser contexts). */
function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const idempotencyKeys: Middleware = {
  onRequest({ request, schemaPath }) {
    const keyed = request.method === "POST" && idempotentOperationPaths.includes(schemaPath);
    if (keyed && !request.headers.has("Idempotency-Key")) request.headers.set("Idempotency-Key", newIdempotencyKey());
    return request;
  },
};

/** Sets `Authorization: Bearer <token>` on an attempt, unless the call brought its own Authorization. */
function bearer(token: TokenSource): (attempt: Request) => Promise<void> {
  return async (attempt) => {
    if (attempt.headers.has("Authorization")) return;
    const value = typeof token === "function" ? await token() : token;
    if (value) attempt.headers.set("Authorization", `Bearer ${value}`);
  };
}

/**
 * A client for the Integrator API at `baseUrl`, authenticated with `token` when given (a token provider
 * is asked before every attempt, so a retry after a long wait carries a current token).
 */
export function createIntegratorClient(options: IntegratorClientOptions): IntegratorClient {
  const send = options.fetch ?? ((request: Request, init?: unknown) => fetch(request, init as RequestInit));
  const client = createClient<paths, "application/json">({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    ...(options.headers ? { headers: options.headers } : {}),
    fetch: retryingFetch(send, {
      retry: options.retry,
      prepare: options.token === undefined ? undefined : bearer(options.token),
    }),
  });
  client.use(idempotencyKeys);
  return client;
}

/**
 * Request options that send `Idempotency-Key: key`, to spread into a call of an operation that takes one
 * (submitIntake, submitIntakeBatch, switchPartner), instead of the key the client makes up: repeating the
 * call with the same key and body replays the first answer (`Idempotent-Replayed: true`) instead of acting
 * twice, also from another process or after a restart.
 */
export function withIdempotencyKey(key: string): { headers: { "Idempotency-Key": string } } {
  if (key.length < 1 || key.length > 128) throw new RangeError("An Idempotency-Key has 1 to 128 characters");
  return { headers: { "Idempotency-Key": key } };
}
