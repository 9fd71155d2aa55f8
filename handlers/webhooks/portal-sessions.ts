// Webhook portal links: a short-lived credential for one tenant's webhook operations, in the fragment
// of a link to the /portal page (browsers never send a fragment to a server, so it reaches no log).
import { effectiveTenant } from "../../http/tenancy.ts";
import { notFound } from "../../http/errors.ts";
import { principalOf, type OperationHandler } from "../../http/operations.ts";
import { recordAudit } from "../../db/audit.ts";
import { tenantExists } from "../../db/principals.ts";
import { rfc3339 } from "../../db/timestamps.ts";

export const createWebhookPortalSession: OperationHandler<"createWebhookPortalSession"> = async ({
  query,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const tenantId = effectiveTenant(caller, query.tenant_id);
  if (tenantId !== caller.tenantId && !(await tenantExists(services.db, tenantId))) throw notFound("Tenant");
  const { token, expiresIn, expiresAt } = await services.tokens.issuePortal({
    subject: caller.subject,
    tenantId,
    creatorTenantId: caller.tenantId,
    expiresInSeconds: services.config.portal.sessionTtlMinutes * 60,
  });
  const expiresAtText = rfc3339(new Date(expiresAt * 1000));
  await recordAudit(services.db, {
    tenantId,
    action: "webhooks.portal_session_created",
    actor: caller.subject,
    resourceType: "portal_session",
    resourceId: tenantId,
    requestId,
    details: { expires_at: expiresAtText },
  });
  return {
    status: 201,
    body: {
      url: `${services.config.publicBaseUrl}/portal#token=${token}`,
      tenant_id: tenantId,
      expires_at: expiresAtText,
      expires_in: expiresIn,
    },
  };
};
