// Signed partner-to-hub callbacks (docs/decisions.md §7): the signature from its first present source,
// checked over both canonical serialisations in constant time, then the event stored exactly once.
import { createHash, randomBytes } from "node:crypto";
import { canonicalJson } from "../../server/canonical-json.ts";
import { ApiError } from "../../http/errors.ts";
import { isUuid } from "../../db/ids.ts";
import { depthOf } from "../../server/json-limits.ts";
import type { Services } from "../../server/services.ts";
import { hmacSha256Hex, signaturesEqual } from "../../server/signing.ts";
import { RequestValidationError, valueError } from "../../http/validation.ts";
import { recordAudit } from "../../db/audit.ts";
import { findPartnerAccess, insertCallbackOnce } from "../../db/partners.ts";

import type { PartnerCallback, CallbackReceipt } from "./routing.ts";
const CALLBACK_PAYLOAD_MAX_DEPTH = 32;
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

/** Both serialisations a partner may have signed: ASCII-escaped (Python's default) and UTF-8. */
export function callbackSignatureMatches(secret: string | Buffer, signed: unknown, presented: string): boolean {
  const utf8 = canonicalJson(signed);
  const ascii = canonicalJson(signed, { asciiOnly: true });
  const utf8Matches = signaturesEqual(hmacSha256Hex(secret, utf8), presented);
  const asciiMatches = ascii === utf8 ? utf8Matches : signaturesEqual(hmacSha256Hex(secret, ascii), presented);
  return utf8Matches || asciiMatches;
}

/** The event's identity within (tenant, partner): payload.event_id, else payload.id, else the whole signed object. */
export function callbackEventKey(signed: {
  tenant_id: string;
  partner_key: string;
  payload: Record<string, unknown>;
}): string {
  const { payload } = signed;
  const identity =
    typeof payload.event_id === "string" && payload.event_id !== ""
      ? ["event_id", payload.event_id]
      : payload.id !== undefined && payload.id !== null
        ? ["id", payload.id]
        : ["signed", signed];
  return createHash("sha256").update(canonicalJson(identity), "utf8").digest("hex");
}

/**
 * Verifies and stores a partner callback. The body's shape was checked by the contract; here: the
 * signature, the partner and the tenant's entitlement (all CALLBACK_SIGNATURE_INVALID alike), the
 * partner's state (paused: 503), then the event exactly once.
 */
export async function receiveCallback(services: Services, request: CallbackRequest): Promise<CallbackReceipt> {
  const { tenant_id: tenantIdAsSent, payload } = request.body;
  // canonicalJson recurses: a hostile nesting depth is refused before it is serialised.
  if (depthOf(payload, CALLBACK_PAYLOAD_MAX_DEPTH) > CALLBACK_PAYLOAD_MAX_DEPTH) {
    throw new RequestValidationError([
      valueError(["body", "payload"], `payload must be nested at most ${CALLBACK_PAYLOAD_MAX_DEPTH} levels deep`),
    ]);
  }
  const presented = presentedSignature(request);
  if (presented === undefined) throw new ApiError("CALLBACK_SIGNATURE_INVALID", CALLBACK_REJECTED);
  const tenantId = isUuid(tenantIdAsSent) ? tenantIdAsSent.toLowerCase() : undefined;
  const signed = { tenant_id: tenantIdAsSent, partner_key: request.partnerKey, payload };

  const partner = await findPartnerAccess(services.db, request.partnerKey, tenantId);
  const secret = partner ? services.secretBox.open(partner.callback_secret_encrypted) : DECOY_SECRET;
  const verified = callbackSignatureMatches(secret, signed, presented);
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
      eventKey: callbackEventKey(signed),
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
