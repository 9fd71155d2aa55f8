// Partners (contract decisions §7): the governed launch and switch, which answer with a routing decision
// carrying a signed assertion, the signed partner-to-hub callbacks, and the registry changes the admin CLI
// makes.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { components } from "../../generated/openapi.ts";
import type { Principal } from "../../server/auth/tokens.ts";
import { canonicalJson } from "../../server/canonical-json.ts";
import { ApiError, notFound } from "../../server/http/errors.ts";
import { isUuid, uuidV7 } from "../../db/ids.ts";
import {
  requestFingerprint,
  runIdempotent,
  type IdempotencyScope,
  type IdempotentOutcome,
} from "../../server/http/idempotency.ts";
import { depthOf } from "../../server/json-limits.ts";
import type { Services } from "../../server/services.ts";
import { hmacSha256Hex, signaturesEqual } from "../../server/signing.ts";
import { RequestValidationError, valueError, type ValidationIssue } from "../../server/http/validation.ts";
import { recordAudit } from "../../db/audit.ts";
import {
  entitleTenant,
  findPartner,
  findPartnerAccess,
  insertCallbackOnce,
  insertPartner,
  insertRoutingDecision,
  setPartnerStatus,
  type PartnerAccess,
  type PartnerRecord,
  type PartnerStatus,
} from "../../db/partners.ts";

export type RoutingDecision = components["schemas"]["RoutingDecisionResponse"];
export type ContextValues = components["schemas"]["ContextValues"];
export type PartnerCallback = components["schemas"]["PartnerCallbackRequest"];
export type CallbackReceipt = components["schemas"]["PartnerCallbackAcceptedResponse"];

export const ASSERTION_LIFETIME_SECONDS = 120;
/** The Idempotency-Key scope of partner switch: never shared with the intake routes'. */
export const SWITCH_ROUTE = "partner.switch";
export const CALLBACK_PAYLOAD_MAX_DEPTH = 32;
const PAUSED_RETRY_AFTER_SECONDS = 300;

// ------------------------------------------------------------------------------ launch and switch

export interface RoutingRequest {
  kind: "launch" | "switch";
  principal: Principal;
  partnerKey: string;
  contextValues: ContextValues | undefined;
  returnUrl: string | undefined;
  /** The caller's X-Correlation-Id; a UUID is generated when absent. */
  correlationId: string | undefined;
  /** Partner switch only. */
  idempotencyKey: string | undefined;
  /** The validated body as sent: the idempotency fingerprint covers exactly it. */
  body: unknown;
  requestId: string;
}

/** Why return_url is refused, or undefined when it is an absolute https URL without credentials. */
export function returnUrlProblem(raw: string): string | undefined {
  return urlProblem(raw, "return_url", { allowLoopbackHttp: false });
}

/** The URL rules return_url and launch URLs share: absolute, https (http on loopback where allowed), no credentials. */
function urlProblem(
  raw: string,
  name: string,
  options: { allowLoopbackHttp: boolean; maxLength?: number },
): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `${name} must be an absolute URL`;
  }
  if (options.maxLength !== undefined && raw.length > options.maxLength)
    return `${name} must be at most ${options.maxLength} characters`;
  if (
    url.protocol !== "https:" &&
    !(options.allowLoopbackHttp && url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname))
  ) {
    return options.allowLoopbackHttp
      ? `${name} must use https (http only for localhost)`
      : `${name} scheme must be https`;
  }
  if (url.username !== "" || url.password !== "") return `${name} must not carry a user or password`;
  return undefined;
}

function isContextValue(value: unknown): boolean {
  return (
    typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isInteger(value))
  );
}

/** Keys must be among the partner's context keys and values strings, integers or booleans: else CONTEXT_INVALID naming the keys. */
export function checkContextValues(
  partner: Pick<PartnerRecord, "partner_key" | "context_keys">,
  values: Record<string, unknown>,
): void {
  const accepted = new Set(partner.context_keys);
  const issues: ValidationIssue[] = [];
  for (const [key, value] of Object.entries(values)) {
    if (!accepted.has(key))
      issues.push(
        valueError(
          ["body", "context_values", key],
          `${key} is not a context key of partner ${partner.partner_key}`,
          value,
        ),
      );
    else if (!isContextValue(value))
      issues.push(
        valueError(["body", "context_values", key], "context values must be strings, integers or booleans", value),
      );
  }
  if (issues.length === 0) return;
  const keys = issues.map((issue) => String(issue.loc[2]));
  throw new ApiError(
    "CONTEXT_INVALID",
    `context_values holds keys or values partner ${partner.partner_key} does not accept: ${keys.join(", ")}`,
    { details: { keys, errors: issues } },
  );
}

async function decide(
  services: Services,
  request: RoutingRequest,
  partner: PartnerAccess,
  correlationId: string,
): Promise<RoutingDecision> {
  const decisionId = uuidV7();
  const base = { decision_id: decisionId, partner_key: partner.partner_key, correlation_id: correlationId };
  // Entitlement first: a tenant that may not use the partner learns nothing about its state.
  if (!partner.entitled) return { ...base, decision_result: "denied", reason: "NOT_ENTITLED" };
  if (partner.status === "paused") return { ...base, decision_result: "denied", reason: "PARTNER_PAUSED" };
  const { principal } = request;
  const { token, expiresAt } = await services.tokens.issue({
    subject: principal.subject,
    tenantId: principal.tenantId,
    roles: principal.roles,
    audience: partner.partner_key,
    expiresInSeconds: ASSERTION_LIFETIME_SECONDS,
    extraClaims: {
      ctx: request.contextValues ?? {},
      decision_id: decisionId,
      correlation_id: correlationId,
      ...(request.returnUrl === undefined ? {} : { return_url: request.returnUrl }),
    },
  });
  const redirect = new URL(partner.launch_url);
  redirect.searchParams.set("assertion", token);
  return {
    ...base,
    decision_result: "routed",
    redirect_url: redirect.toString(),
    expires_at: new Date(expiresAt * 1000).toISOString(),
  };
}

/**
 * Launch or switch: 404 for an unknown partner, 422 CONTEXT_INVALID for context the partner does not
 * accept, else a routed or denied decision, recorded with its audit action in one transaction (under the
 * switch's Idempotency-Key when one is given).
 */
export async function routeToPartner(
  services: Services,
  request: RoutingRequest,
): Promise<IdempotentOutcome<RoutingDecision>> {
  if (request.returnUrl !== undefined) {
    const problem = returnUrlProblem(request.returnUrl);
    if (problem) throw new RequestValidationError([valueError(["body", "return_url"], problem, request.returnUrl)]);
  }
  const { principal } = request;
  const tenantId = principal.tenantId;
  const partner = await findPartnerAccess(services.db, request.partnerKey, tenantId);
  if (!partner) throw notFound("Partner");
  checkContextValues(partner, request.contextValues ?? {});
  const scope: IdempotencyScope | undefined =
    request.kind === "switch" && request.idempotencyKey !== undefined
      ? { tenantId, subject: principal.subject, route: SWITCH_ROUTE, key: request.idempotencyKey }
      : undefined;
  return runIdempotent(
    services.db,
    scope,
    requestFingerprint(request.body, tenantId),
    services.config.idempotencyTtlHours,
    async (trx) => {
      const decision = await decide(services, request, partner, request.correlationId ?? randomUUID());
      await insertRoutingDecision(trx, {
        id: decision.decision_id,
        tenantId,
        kind: request.kind,
        partnerKey: partner.partner_key,
        result: decision.decision_result,
        reason: decision.reason ?? null,
        correlationId: decision.correlation_id,
        returnUrl: request.returnUrl ?? null,
        expiresAt: decision.expires_at ?? null,
        createdBy: principal.subject,
        requestId: request.requestId,
      });
      await recordAudit(trx, {
        tenantId,
        action: request.kind === "launch" ? "partner.launch" : "partner.switch",
        actor: principal.subject,
        resourceType: "routing_decision",
        resourceId: decision.decision_id,
        requestId: request.requestId,
        details: {
          partner_key: partner.partner_key,
          decision_result: decision.decision_result,
          reason: decision.reason ?? null,
          correlation_id: decision.correlation_id,
        },
      });
      return { status: 200, body: decision };
    },
  );
}

// ------------------------------------------------------------------------------ callbacks

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
  const secret = partner ? services.box.open(partner.callback_secret_encrypted) : DECOY_SECRET;
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

// ------------------------------------------------------------------------------ registry (admin CLI)

export class PartnerChangeRefused extends Error {
  override name = "PartnerChangeRefused";
}

export const PARTNER_KEY = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const CONTEXT_KEY = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;
const MAX_CONTEXT_KEYS = 50;
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Launch URLs are absolute https URLs (http only on a loopback host, for local development), without credentials. */
export function launchUrlProblem(raw: string): string | undefined {
  return urlProblem(raw, "--launch-url", { allowLoopbackHttp: true, maxLength: 2048 });
}

export interface NewPartnerInput {
  partnerKey: string;
  name: string;
  launchUrl: string;
  contextKeys: string[];
}

/** Registers a partner with a new callback secret, returned here once and stored only sealed. */
export async function registerPartner(
  services: Services,
  input: NewPartnerInput,
): Promise<PartnerRecord & { callback_secret: string }> {
  if (!PARTNER_KEY.test(input.partnerKey))
    throw new PartnerChangeRefused(
      "--key must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
    );
  // The assertion's audience is the partner key: the service's own audience would make it an access token.
  if (input.partnerKey === services.config.selfAudience)
    throw new PartnerChangeRefused(
      `--key must not be the service's own token audience (${services.config.selfAudience})`,
    );
  if (input.name.length > 200) throw new PartnerChangeRefused("--name must be at most 200 characters");
  const urlProblem = launchUrlProblem(input.launchUrl);
  if (urlProblem) throw new PartnerChangeRefused(urlProblem);
  const contextKeys = [...new Set(input.contextKeys)];
  const badKey = contextKeys.find((key) => !CONTEXT_KEY.test(key));
  if (badKey !== undefined)
    throw new PartnerChangeRefused(
      `--context-keys: "${badKey}" is not a key (1 to 64 letters, digits, '_', '.' or '-', not starting with a digit)`,
    );
  if (contextKeys.length > MAX_CONTEXT_KEYS)
    throw new PartnerChangeRefused(`--context-keys takes at most ${MAX_CONTEXT_KEYS} keys`);
  const callbackSecret = `pcs_${randomBytes(32).toString("base64url")}`;
  const partner = await insertPartner(services.db, {
    partnerKey: input.partnerKey,
    name: input.name,
    launchUrl: input.launchUrl,
    contextKeys,
    callbackSecretEncrypted: services.box.seal(callbackSecret),
  });
  if (!partner) throw new PartnerChangeRefused(`partner ${input.partnerKey} exists already`);
  return { ...partner, callback_secret: callbackSecret };
}

export async function entitlePartner(
  services: Services,
  tenantId: string,
  partnerKey: string,
): Promise<{ tenant_id: string; partner_key: string; newly_entitled: boolean }> {
  if (!(await findPartner(services.db, partnerKey)))
    throw new PartnerChangeRefused(`partner ${partnerKey} does not exist`);
  const newlyEntitled = await entitleTenant(services.db, tenantId, partnerKey);
  return { tenant_id: tenantId, partner_key: partnerKey, newly_entitled: newlyEntitled };
}

export async function changePartnerStatus(
  services: Services,
  partnerKey: string,
  status: PartnerStatus,
): Promise<PartnerRecord> {
  const partner = await setPartnerStatus(services.db, partnerKey, status);
  if (!partner) throw new PartnerChangeRefused(`partner ${partnerKey} does not exist`);
  return partner;
}
