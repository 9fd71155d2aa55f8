// Verifying a webhook delivery with the `standardwebhooks` package (https://www.standardwebhooks.com): the
// signature over `webhook-id.webhook-timestamp.body`, a timestamp within five minutes, and the body parsed as
// the document's WebhookEventPayload.
import { Webhook } from "standardwebhooks";
import type { components } from "../../../generated/openapi.ts";

/**
 * The body of a delivery, one type per event kind told apart by `event`: after
 * `if (payload.event === "intake.submitted")`, `payload.data` is that kind's data.
 */
export type WebhookEventPayload = components["schemas"]["WebhookEventPayload"];

/** The headers of the delivery as received: a fetch `Headers`, or a record such as Node's `req.headers`. */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

/** A delivery that is not signed with the secret, is too old or too new, or whose body is not an event. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

const PREFIX = "whsec_";
const SIGNED_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

/**
 * The secret in the form the `standardwebhooks` package reads: `whsec_` and standard base64. Secrets made by
 * earlier versions of the service are base64url (`-`, `_`, no padding), which that package's decoder refuses.
 */
function standardSecret(secret: string): string {
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  const base64 = encoded.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  return `${PREFIX}${base64}${"=".repeat((4 - (base64.length % 4)) % 4)}`;
}

function signedHeaders(headers: WebhookHeaders): Record<string, string> {
  const found: Record<string, string> = {};
  if (headers instanceof Headers) {
    for (const name of SIGNED_HEADERS) found[name] = headers.get(name) ?? "";
    return found;
  }
  const lowerCased = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  for (const name of SIGNED_HEADERS) {
    const value = lowerCased.get(name);
    found[name] = typeof value === "string" ? value : (value ?? []).join(" ");
  }
  return found;
}

function isEvent(value: unknown): value is WebhookEventPayload {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { event?: unknown }).event === "string" &&
    typeof (value as { data?: unknown }).data === "object"
  );
}

/**
 * Verifies a delivery and returns its event. `body` is the raw body exactly as received (a string, or the
 * bytes: a Node `Buffer` or `Uint8Array`), never a parsed and re-serialised object; `secret` is the
 * subscription's secret exactly as it was returned (`whsec_…`). During a secret rotation's overlap a
 * delivery carries one signature per secret, and either secret verifies it. Throws
 * WebhookVerificationError unless the delivery is authentic and its timestamp within five minutes of now.
 * Receivers should also drop a `webhook-id` they have handled: retries repeat it.
 */
export function verifyWebhook(body: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEventPayload {
  if (typeof body !== "string" && !(body instanceof Uint8Array))
    throw new TypeError("verifyWebhook needs the raw body (a string or bytes), not a parsed object");
  let webhook: Webhook;
  try {
    webhook = new Webhook(standardSecret(secret));
  } catch (error) {
    throw new WebhookVerificationError("The webhook secret is not a whsec_ secret of this service", { cause: error });
  }
  let payload: unknown;
  try {
    payload = webhook.verify(typeof body === "string" ? body : new TextDecoder().decode(body), signedHeaders(headers));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new WebhookVerificationError(`The webhook delivery did not verify: ${reason}`, { cause: error });
  }
  if (!isEvent(payload)) throw new WebhookVerificationError("The webhook delivery's body is not an event");
  return payload;
}
