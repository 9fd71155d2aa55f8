// HMAC-SHA256 signatures: webhook bodies (X-Service-Review-Signature) and partner callbacks
// (X-Callback-Signature), docs/decisions.md §5 and §7.
import { createHmac, timingSafeEqual } from "node:crypto";

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
