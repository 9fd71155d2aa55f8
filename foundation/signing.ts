// HMAC-SHA256 signatures: webhook bodies (X-Service-Review-Signature) and partner callbacks
// (X-Callback-Signature), docs/decisions.md §5 and §7.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** Hex (lowercase) HMAC-SHA256 of `data` under `secret`; strings are taken as UTF-8. */
export function hmacSha256Hex(secret: string | Buffer, data: string | Buffer): string {
  return createHmac("sha256", secret).update(data).digest("hex");
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const PREFIX = /^sha256=/i;

/**
 * Compares the expected hex digest with a presented signature in constant time. The presented
 * value may carry a "sha256=" prefix and use either hex case. Non-hex input, an odd number of
 * digits or a different length is false.
 */
export function signaturesEqual(expectedHex: string, presented: string): boolean {
  if (typeof expectedHex !== "string" || typeof presented !== "string") return false;
  const candidate = presented.replace(PREFIX, "");
  if (!HEX.test(expectedHex) || !HEX.test(candidate)) return false;
  const expected = Buffer.from(expectedHex, "hex");
  const actual = Buffer.from(candidate, "hex");
  if (expected.length !== actual.length) return false;
  return timingSafeEqual(expected, actual);
}

const WEBHOOK_SECRET_PREFIX = "whsec_";

/**
 * A new webhook signing secret: `whsec_` and 32 random bytes in standard base64, the form Standard Webhooks
 * libraries read (the `standardwebhooks` package's `new Webhook(secret)` takes it exactly as shown).
 * Secrets made before were base64url; both keep working (webhookSecretKey reads either alphabet).
 */
export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString("base64")}`;
}

/** The Standard Webhooks key of a secret: the bytes the text after `whsec_` encodes, in base64 or base64url. */
export function webhookSecretKey(secret: string): Buffer {
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret;
  // Node's base64 decoder reads both alphabets (+/ and -_), with or without padding.
  return Buffer.from(encoded, "base64");
}
