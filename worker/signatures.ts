// How a delivery is signed (contract §Signing): the hex HMAC-SHA256 of the exact body bytes under the
// subscription's secret, sent as X-Service-Review-Signature.
import { hmacSha256Hex } from "../server/signing.ts";

export const SIGNATURE_HEADER = "X-Service-Review-Signature";

export function signatureHeaders(secret: string, body: string): Record<string, string> {
  return { [SIGNATURE_HEADER]: hmacSha256Hex(secret, body) };
}
