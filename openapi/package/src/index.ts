// The typed client of the Integrator API: openapi-fetch over the types openapi-typescript generates from the
// document. Published in the contract package (openapi/package), which carries no server code; the
// repository's own tests import it from here.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, operations, paths, webhooks } from "../../../generated/openapi.ts";

export type { components, operations, paths, webhooks };

/** Every schema of the document by name, e.g. `Schemas["IntakeSubmissionResponse"]`. */
export type Schemas = components["schemas"];

/** The body of a delivery of each webhook event kind, e.g. `WebhookEvent<"intake.submitted">`. */
export type WebhookEvent<K extends keyof webhooks> = webhooks[K]["post"] extends {
  requestBody: { content: { "application/json": infer Body } };
}
  ? Body
  : never;

/** A bearer token, or a function that returns the current one (called before every request). */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

export interface IntegratorClientOptions {
  /** The service's base URL without a trailing slash or `/v1`, e.g. `https://integrator.example.com`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>` on every request when present. */
  token?: TokenSource | undefined;
  /** Headers sent with every request (e.g. `X-Request-Id`). */
  headers?: Record<string, string>;
  /** A fetch of your own (proxies, tests); the global fetch by default. */
  fetch?: (input: Request) => Promise<Response>;
}

/** The client: `GET`, `POST`, `DELETE`, ... by path, typed by the document. */
export type IntegratorClient = Client<paths, "application/json">;

function bearer(token: TokenSource): Middleware {
  return {
    async onRequest({ request }) {
      const value = typeof token === "function" ? await token() : token;
      if (value && !request.headers.has("Authorization")) request.headers.set("Authorization", `Bearer ${value}`);
      return request;
    },
  };
}

/** A client for the Integrator API at `baseUrl`, authenticated with `token` when given. */
export function createIntegratorClient(options: IntegratorClientOptions): IntegratorClient {
  const client = createClient<paths, "application/json">({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  if (options.token !== undefined) client.use(bearer(options.token));
  return client;
}

/**
 * Request options that send `Idempotency-Key: key`, to spread into a call of an operation that takes one
 * (submitIntake, submitIntakeBatch, switchPartner): repeating the call with the same key and body replays
 * the first answer (`Idempotent-Replayed: true`) instead of acting twice.
 */
export function withIdempotencyKey(key: string): { headers: { "Idempotency-Key": string } } {
  if (key.length < 1 || key.length > 128) throw new RangeError("An Idempotency-Key has 1 to 128 characters");
  return { headers: { "Idempotency-Key": key } };
}
