// Signed partner-to-hub callbacks (docs/decisions.md §7): the signature from its first present source,
// checked over both canonical serialisations in constant time, then the event stored exactly once.
// Anyone can send one, so what it may cost before the signature is known is bounded: the body's size
// (body parsing), its payload's depth and keys (here, before any serialisation), the callbacks in
// flight per client address (http/in-flight.ts), and the payload is walked and sorted once.
import { createHash, randomBytes } from "node:crypto";
import { asciiEscaped, canonicalJson } from "../../foundation/canonical-json.ts";
import { ApiError } from "../../http/errors.ts";
import { isUuid } from "../../db/ids.ts";
import { shapeExcess } from "../../foundation/json-limits.ts";
import type { Services } from "../../foundation/services.ts";
import { hmacSha256Hex, signaturesEqual } from "../../foundation/signing.ts";
import { RequestValidationError, valueError } from "../../http/validation.ts";
import { recordAudit } from "../../db/audit.ts";
import { findPartnerAccess, insertCallbackOnce } from "../../db/partners.ts";
import { PARTNER_KEY } from "./registry.ts";

import type { PartnerCallback, CallbackReceipt } from "./routing.ts";
const PAUSED_RETRY_AFTER_SECONDS = 300;

export interface CallbackRequest {
  partnerKey: string;
  body: PartnerCallback;
  headerSignature: string | undefined;
  querySignature: string | undefined;
  requestId: string;
}

// One message for every reason a callback cannot be attributed, so the answer never tells whether a
// partner exists or a tenant is entitled.
export const CALLBACK_REJECTED = "The callback signature is missing or does not match";
// Unknown partners are checked against a throwaway secret: rejecting them costs the same HMAC work.
const DECOY_SECRET = randomBytes(32);

/** The signature's first present source: header, else query parameter, else body field (even when it is wrong). */
export function presentedSignature(
  request: Pick<CallbackRequest, "headerSignature" | "querySignature" | "body">,
): string | undefined {
  return request.headerSignature ?? request.querySignature ?? request.body.signature;
}

// Characters the ASCII serialisation escapes (canonical-json.ts); without any, both forms are one text.
const NON_ASCII = /[\u007f-\uffff]/;

/**
 * Both serialisations a partner may have signed, ASCII-escaped (Python's default) and UTF-8, given the
 * UTF-8 canonical text: the ASCII one is derived from it rather than serialised again.
 */
export function callbackSignatureMatches(secret: string | Buffer, utf8: string, presented: string): boolean {
  const ascii = NON_ASCII.test(utf8) ? asciiEscaped(utf8) : utf8;
  const utf8Matches = signaturesEqual(hmacSha256Hex(secret, utf8), presented);
  const asciiMatches = ascii === utf8 ? utf8Matches : signaturesEqual(hmacSha256Hex(secret, ascii), presented);
  return utf8Matches || asciiMatches;
}

/**
 * The event's identity within (tenant, partner): payload.event_id, else payload.id, else the whole signed
 * object, hashed as the canonical JSON of ["event_id", id], ["id", id] or ["signed", signed object] (the
 * last written from the signed object's canonical text `signedCanonical`, which it contains verbatim).
 */
export function callbackEventKey(payload: Record<string, unknown>, signedCanonical: string): string {
  const identity =
    typeof payload.event_id === "string" && payload.event_id !== ""
      ? canonicalJson(["event_id", payload.event_id])
      : payload.id !== undefined && payload.id !== null
        ? canonicalJson(["id", payload.id])
        : `["signed",${signedCanonical}]`;
  return createHash("sha256").update(identity, "utf8").digest("hex");
}

/**
 * Verifies and stores a partner callback. The body's shape was checked by the contract; here: the
 * signature, the partner and the tenant's entitlement (all CALLBACK_SIGNATURE_INVALID alike), the
 * partner's state (paused: 503), then the event exactly once.
 */
export async function receiveCallback(services: Services, request: CallbackRequest): Promise<CallbackReceipt> {
  const { tenant_id: tenantIdAsSent, payload } = request.body;
  // canonicalJson recurses and sorts every object's keys: a hostile payload is refused before it is serialised.
  const { maxDepth, maxKeys } = services.config.callbacks;
  const excess = shapeExcess(payload, { maxDepth, maxKeys });
  if (excess !== undefined) {
    throw new RequestValidationError([
      valueError(
        ["body", "payload"],
        excess === "depth"
          ? `payload must be nested at most ${maxDepth} levels deep`
          : `payload may hold at most ${maxKeys} keys and array items in all`,
      ),
    ]);
  }
  const presented = presentedSignature(request);
  if (presented === undefined) throw new ApiError("CALLBACK_SIGNATURE_INVALID", CALLBACK_REJECTED);
  const tenantId = isUuid(tenantIdAsSent) ? tenantIdAsSent.toLowerCase() : undefined;
  const signedCanonical = canonicalJson({ tenant_id: tenantIdAsSent, partner_key: request.partnerKey, payload });

  // A key no partner can have (a NUL in it, which PostgreSQL would refuse in the statement) is an unknown partner.
  const partner = PARTNER_KEY.test(request.partnerKey)
    ? await findPartnerAccess(services.db, request.partnerKey, tenantId)
    : undefined;
  const secret = partner ? services.secretBox.open(partner.callback_secret_encrypted) : DECOY_SECRET;
  const verified = callbackSignatureMatches(secret, signedCanonical, presented);
  if (!verified || !partner || !partner.entitled || tenantId === undefined)
    throw new ApiError("CALLBACK_SIGNATURE_INVALID", CALLBACK_REJECTED);
  if (partner.status === "paused") {
    throw new ApiError("SERVICE_UNAVAILABLE", `Partner ${partner.partner_key} is paused; retry later`, {
      headers: { "Retry-After": String(PAUSED_RETRY_AFTER_SECONDS) },
    });
  }
  return services.db.transaction(async (trx): Promise<CallbackReceipt> => {
    const stored = await insertCallbackOnce(trx, {
      tenantId,
      partnerKey: partner.partner_key,
      eventKey: callbackEventKey(payload, signedCanonical),
      event: payload.event,
      payload,
      requestId: request.requestId,
    });
    if (!stored.duplicate) {
      await recordAudit(trx, {
        tenantId,
        action: "partner.callback_received",
        actor: `partner:${partner.partner_key}`,
        resourceType: "partner_callback",
        resourceId: stored.id,
        requestId: request.requestId,
        details: { partner_key: partner.partner_key, event: payload.event },
      });
    }
    return { status: "accepted", callback_id: stored.id, duplicate: stored.duplicate };
  });
}
