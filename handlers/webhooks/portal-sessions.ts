// Webhook portal links: a short-lived credential for one tenant's webhook operations, in the fragment
// of a link to the /portal page (browsers never send a fragment to a server, so it reaches no log). A
// refresh retires the credential it was given (db/portal-credentials.ts): one chain of credentials per link.
// Every new link is made by createPortalLink: the API's, the first start's demo link and `admin portal:link`.
import { effectiveTenant } from "../../http/tenancy.ts";
import { ApiError, notFound } from "../../http/errors.ts";
import { PORTAL_SESSION_MAX_AGE_SECONDS, PORTAL_SUBJECT_PREFIX } from "../../foundation/auth/tokens.ts";
import { principalOf, type OperationHandler } from "../../http/operations.ts";
import { recordAudit } from "../../db/audit.ts";
import { retirePortalCredential } from "../../db/portal-credentials.ts";
import { invalidToken } from "../../http/authentication.ts";
import { tenantExists } from "../../db/principals.ts";
import { rfc3339 } from "../../db/timestamps.ts";
import type { components } from "../../generated/openapi.ts";
import type { Services } from "../../foundation/services.ts";

export type PortalLink = components["schemas"]["WebhookPortalSessionResponse"];

/**
 * A new portal link to `tenantId`'s webhooks, valid for PORTAL_SESSION_TTL_MINUTES, made by `subject` of
 * `creatorTenantId` (the link dies with that principal) and audited as its action.
 */
export async function createPortalLink(
  services: Services,
  link: { subject: string; tenantId: string; creatorTenantId: string; baseUrl: string; requestId: string | undefined },
): Promise<PortalLink> {
  const { token, expiresIn, expiresAt } = await services.tokens.issuePortal({
    subject: link.subject,
    tenantId: link.tenantId,
    creatorTenantId: link.creatorTenantId,
    expiresInSeconds: services.config.portal.sessionTtlMinutes * 60,
  });
  const expiresAtText = rfc3339(new Date(expiresAt * 1000));
  await recordAudit(services.db, {
    tenantId: link.tenantId,
    action: "webhooks.portal_session_created",
    actor: link.subject,
    resourceType: "portal_session",
    resourceId: link.tenantId,
    requestId: link.requestId,
    details: { expires_at: expiresAtText },
  });
  return {
    url: `${link.baseUrl}/portal#token=${token}`,
    tenant_id: link.tenantId,
    expires_at: expiresAtText,
    expires_in: expiresIn,
  };
}

export const createWebhookPortalSession: OperationHandler<"createWebhookPortalSession"> = async ({
  query,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const tenantId = effectiveTenant(caller, query.tenant_id);
  if (tenantId !== caller.tenantId && !(await tenantExists(services.db, tenantId))) throw notFound("Tenant");
  const body = await createPortalLink(services, {
    subject: caller.subject,
    tenantId,
    creatorTenantId: caller.tenantId,
    baseUrl: services.config.publicBaseUrl,
    requestId,
  });
  return { status: 201, body };
};

/**
 * A fresh credential for the portal page's own session, never past PORTAL_SESSION_MAX_AGE_SECONDS from its
 * link; the credential presented is retired (401 from then on), and one already retired is refused.
 */
export const refreshWebhookPortalSession: OperationHandler<"refreshWebhookPortalSession"> = async ({
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  if (!caller.portal)
    throw new ApiError(
      "FORBIDDEN",
      "Only a portal credential can be refreshed; create a portal session (POST /v1/webhooks/portal-sessions)",
    );
  const now = Math.floor(Date.now() / 1000);
  const startedAt = caller.portalSessionStartedAt ?? now;
  const lifetime = Math.min(
    services.config.portal.sessionTtlMinutes * 60,
    startedAt + PORTAL_SESSION_MAX_AGE_SECONDS - now,
  );
  if (lifetime < 1)
    throw new ApiError("FORBIDDEN", "This portal session can no longer be extended; ask for a new portal link");
  const { token, expiresIn, expiresAt } = await services.tokens.issuePortal({
    subject: caller.subject.slice(PORTAL_SUBJECT_PREFIX.length),
    tenantId: caller.tenantId,
    // The refreshed link dies with whoever made the first one, as that one does.
    creatorTenantId: caller.creatorTenantId ?? caller.tenantId,
    expiresInSeconds: lifetime,
    sessionStartedAt: startedAt,
    ...(caller.portalSessionId === undefined ? {} : { sessionId: caller.portalSessionId }),
  });
  // Its successor exists now: the presented credential is retired, unless a concurrent refresh retired it first.
  const retired =
    caller.tokenId !== undefined &&
    (await retirePortalCredential(services.db, {
      tenantId: caller.tenantId,
      credentialId: caller.tokenId,
      expiresAt: caller.expiresAt ?? now + PORTAL_SESSION_MAX_AGE_SECONDS,
    }));
  if (!retired) throw invalidToken("This portal credential has been refreshed already; only its successor is valid");
  const expiresAtText = rfc3339(new Date(expiresAt * 1000));
  await recordAudit(services.db, {
    tenantId: caller.tenantId,
    action: "webhooks.portal_session_refreshed",
    actor: caller.subject,
    resourceType: "portal_session",
    resourceId: caller.tenantId,
    requestId,
    details: { expires_at: expiresAtText },
  });
  return {
    status: 201,
    body: {
      url: `${services.config.publicBaseUrl}/portal#token=${token}`,
      tenant_id: caller.tenantId,
      expires_at: expiresAtText,
      expires_in: expiresIn,
    },
  };
};
