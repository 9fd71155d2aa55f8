// Governed launch and partner switch (docs/decisions.md §7): each answers with a routing decision,
// routed with a signed assertion or denied with a reason, recorded with its audit action.
import { randomUUID } from "node:crypto";
import type { components } from "../../generated/openapi.ts";
import type { Principal } from "../../foundation/auth/tokens.ts";
import { ApiError } from "../../http/errors.ts";
import { uuidV7 } from "../../db/ids.ts";
import { idempotent, type IdempotentOutcome } from "../../http/idempotency.ts";
import type { Services } from "../../foundation/services.ts";
import { RequestValidationError, valueError, type ValidationIssue } from "../../http/validation.ts";
import {
  findPartnerAccess,
  recordRoutingDecision,
  recordRoutingDecisionOnce,
  type DecisionAudit,
  type NewRoutingDecision,
  type PartnerAccess,
  type PartnerRecord,
} from "../../db/partners.ts";
import { checkUrl } from "../../foundation/url-safety.ts";
import { rfc3339 } from "../../db/timestamps.ts";

export type RoutingDecision = components["schemas"]["RoutingDecisionResponse"];
export type ContextValues = components["schemas"]["ContextValues"];
export type PartnerCallback = components["schemas"]["PartnerCallbackRequest"];
export type CallbackReceipt = components["schemas"]["PartnerCallbackAcceptedResponse"];

export const ASSERTION_LIFETIME_SECONDS = 120;
/** The Idempotency-Key scope of partner switch: never shared with the intake routes'. */
export const SWITCH_ROUTE = "partner.switch";

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
  const verdict = checkUrl(raw, { name: "return_url" });
  return verdict.ok ? undefined : verdict.message;
}

function isContextValue(value: unknown): boolean {
  return (
    typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isInteger(value))
  );
}

/**
 * Values must be strings, integers or booleans and, when `partner` is given, keys among its context keys:
 * else CONTEXT_INVALID naming the keys. Without a partner (unknown, or one the tenant may not use) only the
 * values are checked, so the answer says nothing about that partner.
 */
export function checkContextValues(
  partner: Pick<PartnerRecord, "partner_key" | "context_keys"> | undefined,
  values: Record<string, unknown>,
): void {
  const accepted = partner ? new Set(partner.context_keys) : undefined;
  const issues: ValidationIssue[] = [];
  for (const [key, value] of Object.entries(values)) {
    if (partner && accepted && !accepted.has(key))
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
    partner
      ? `context_values holds keys or values partner ${partner.partner_key} does not accept: ${keys.join(", ")}`
      : `context_values holds values that are not strings, integers or booleans: ${keys.join(", ")}`,
    { details: { keys, errors: issues } },
  );
}

async function decide(
  services: Services,
  request: RoutingRequest,
  partner: PartnerAccess | undefined,
  correlationId: string,
): Promise<RoutingDecision> {
  const decisionId = uuidV7();
  const base = { decision_id: decisionId, partner_key: request.partnerKey, correlation_id: correlationId };
  // Entitlement first: a tenant that may not use the partner learns nothing about its state, nor whether
  // it exists at all (an unknown key is answered exactly like a partner the tenant is not entitled to).
  if (!partner?.entitled) return { ...base, decision_result: "denied", reason: "NOT_ENTITLED" };
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
    expires_at: rfc3339(new Date(expiresAt * 1000)),
  };
}

/**
 * Launch or switch: 422 CONTEXT_INVALID for context the partner does not accept, else a routed or denied
 * decision (an unknown partner is denied NOT_ENTITLED like one the tenant may not use), recorded with its
 * audit action in one statement (under the switch's Idempotency-Key when one is given).
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
  checkContextValues(partner?.entitled ? partner : undefined, request.contextValues ?? {});
  // A finished call is replayed before an assertion is signed for nothing.
  return idempotent<RoutingDecision>({
    services,
    scope:
      request.kind === "switch" && request.idempotencyKey !== undefined
        ? { tenantId, subject: principal.subject, route: SWITCH_ROUTE, key: request.idempotencyKey }
        : undefined,
    body: request.body,
    tenantId,
    replayBeforeWork: true,
    write: async () => {
      const { decision, row, audit } = await prepare();
      await recordRoutingDecision(services.db, row, audit);
      return { status: 200, body: decision };
    },
    writeOnce: async (key) => {
      const { decision, row, audit } = await prepare();
      return recordRoutingDecisionOnce(services.db, key, JSON.stringify(decision), row, audit);
    },
  });

  /** The decision (its assertion signed), its row and its audit action, recorded in one statement. */
  async function prepare() {
    const decision = await decide(services, request, partner, request.correlationId ?? randomUUID());
    const row: NewRoutingDecision = {
      id: decision.decision_id,
      tenantId,
      kind: request.kind,
      partnerKey: request.partnerKey,
      result: decision.decision_result,
      reason: decision.reason ?? null,
      correlationId: decision.correlation_id,
      returnUrl: request.returnUrl ?? null,
      expiresAt: decision.expires_at ?? null,
      createdBy: principal.subject,
      requestId: request.requestId,
    };
    const audit: DecisionAudit = {
      action: request.kind === "launch" ? "partner.launch" : "partner.switch",
      details: {
        partner_key: request.partnerKey,
        decision_result: decision.decision_result,
        reason: decision.reason ?? null,
        correlation_id: decision.correlation_id,
      },
    };
    return { decision, row, audit };
  }
}
