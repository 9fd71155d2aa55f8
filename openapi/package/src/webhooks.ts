// Verifying a webhook delivery with the `standardwebhooks` package (https://www.standardwebhooks.com): a secret
// of the length the specification requires, the signature over `webhook-id.webhook-timestamp.body` for the
// exact bytes received, a timestamp within five minutes, and then the body checked as an event envelope.
import { Webhook } from "standardwebhooks";
import type { components } from "../../../generated/openapi.ts";

/**
 * The body of a delivery, one type per event kind told apart by `event`: after
 * `if (payload.event === "intake.submitted")`, `payload.data` is that kind's data.
 */
export type WebhookEventPayload = components["schemas"]["WebhookEventPayload"];

/** The headers of the delivery as received: a fetch `Headers`, or a record such as Node's `req.headers`. */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

/**
 * A delivery that is not signed with the secret, is too old or too new, or whose body is not an event; or a
 * secret that is not a Standard Webhooks secret.
 */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

const PREFIX = "whsec_";
const SIGNED_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;
/** The key lengths Standard Webhooks allows for a symmetric secret: 24 bytes (192 bits) to 64 bytes (512 bits). */
export const WEBHOOK_KEY_BYTES = { min: 24, max: 64 } as const;

// Standard base64 or base64url (secrets of earlier versions of the service), padded or not.
const BASE64 = /^(?:[A-Za-z0-9+/]+|[A-Za-z0-9_-]+)={0,2}$/;
// A UTF-16 surrogate without its other half: such a string has no UTF-8 form, so no bytes it could stand for.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

/**
 * The HMAC key a `whsec_` secret encodes: the base64 after the prefix (standard, or base64url as earlier
 * versions of the service made them; the prefix may be left out, as the Standard Webhooks libraries allow),
 * 24 to 64 bytes long as Standard Webhooks requires.
 */
function webhookKey(secret: string): Uint8Array {
  if (typeof secret !== "string")
    throw new WebhookVerificationError("The webhook secret must be the whsec_ value returned when you subscribed");
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  const base64 = encoded.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  if (!BASE64.test(encoded) || base64.length % 4 === 1)
    throw new WebhookVerificationError("The webhook secret is not whsec_ followed by base64");
  const binary = atob(`${base64}${"=".repeat((4 - (base64.length % 4)) % 4)}`);
  if (binary.length < WEBHOOK_KEY_BYTES.min || binary.length > WEBHOOK_KEY_BYTES.max)
    throw new WebhookVerificationError(
      `The webhook secret encodes a ${binary.length}-byte key; Standard Webhooks keys are ${WEBHOOK_KEY_BYTES.min} to ${WEBHOOK_KEY_BYTES.max} bytes`,
    );
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}

/**
 * The body as the text whose UTF-8 encoding is exactly the bytes received. `standardwebhooks` signs text
 * (encoded as UTF-8), so each byte must survive the round trip: a byte order mark is kept (a decoder would
 * drop it), and bytes that are not UTF-8 (which no decoding could give back) are refused, never replaced.
 */
function bodyText(body: string | Uint8Array): string {
  if (typeof body === "string") {
    if (LONE_SURROGATE.test(body))
      throw new WebhookVerificationError("The webhook body holds a lone surrogate: it is not the text received");
    return body;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body);
  } catch (error) {
    throw new WebhookVerificationError("The webhook body is not UTF-8 text", { cause: error });
  }
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

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Why a parsed body is not an event envelope (WebhookEventEnvelope), or undefined when it is one. */
function envelopeProblem(value: unknown): string | undefined {
  if (!isObject(value)) return "it is not a JSON object";
  if (typeof value.event !== "string" || value.event === "") return "event must be the event's kind";
  if (typeof value.tenant_id !== "string" || !UUID.test(value.tenant_id)) return "tenant_id must be a UUID";
  if (typeof value.timestamp !== "string" || !RFC3339.test(value.timestamp) || Number.isNaN(Date.parse(value.timestamp)))
    return "timestamp must be an RFC 3339 date-time";
  if (!isObject(value.data)) return "data must be an object";
  if ("id" in value && typeof value.id !== "string") return "id must be the event's id";
  return undefined;
}

/**
 * Verifies a delivery and returns its event. `body` is the raw body exactly as received (the bytes: a Node
 * `Buffer` or `Uint8Array`, or a string whose UTF-8 form they are), never a parsed and re-serialised object;
 * `secret` is the subscription's secret exactly as it was returned (`whsec_…`). The signature is checked over
 * those exact bytes (a byte order mark, a changed byte, bytes that are not UTF-8 all fail). During a secret
 * rotation's overlap a delivery carries one signature per secret, and either secret verifies it. Throws
 * WebhookVerificationError unless the secret is a Standard Webhooks secret (24 to 64 bytes), the delivery is
 * authentic, its timestamp within five minutes of now, and its body an event (`event`, `tenant_id`,
 * `timestamp` and an object `data`). Receivers should also drop a `webhook-id` they have handled: retries
 * repeat it.
 */
export function verifyWebhook(body: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEventPayload {
  if (typeof body !== "string" && !(body instanceof Uint8Array))
    throw new TypeError("verifyWebhook needs the raw body (a string or bytes), not a parsed object");
  const webhook = new Webhook(webhookKey(secret), { format: "raw" });
  const text = bodyText(body);
  try {
    webhook.verify(text, signedHeaders(headers), { jsonParse: false });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new WebhookVerificationError(`The webhook delivery did not verify: ${reason}`, { cause: error });
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch (error) {
    throw new WebhookVerificationError("The webhook delivery's body is not JSON", { cause: error });
  }
  assertEvent(payload);
  return payload;
}

/** Throws WebhookVerificationError naming what is wrong unless `value` is an event envelope. */
function assertEvent(value: unknown): asserts value is WebhookEventPayload {
  const problem = envelopeProblem(value);
  if (problem !== undefined) throw new WebhookVerificationError(`The webhook delivery's body is not an event: ${problem}`);
}
