// The token endpoint and the published signing keys.
import { issueTokenFor } from "./token-grants.ts";
import { principalOf, type OperationHandler } from "../../http/operations.ts";
import { rfc3339 } from "../../db/timestamps.ts";
import { tenantName } from "../../db/principals.ts";

export const issueToken: OperationHandler<"issueToken"> = async ({ services, body, headers }) => ({
  status: 200,
  body: await issueTokenFor(services, body ?? {}, headers.authorization),
  headers: { "Cache-Control": "no-store", Pragma: "no-cache" },
});

export const getJwks: OperationHandler<"getJwks"> = async ({ services }) => ({
  status: 200,
  body: services.tokens.jwks() as never,
  headers: { "Cache-Control": "public, max-age=300" },
});

export const getCurrentPrincipal: OperationHandler<"getCurrentPrincipal"> = async (call) => {
  const { tenantId, subject, roles, expiresAt } = principalOf(call);
  return {
    status: 200,
    body: {
      tenant_id: tenantId,
      tenant_name: (await tenantName(call.services.db, tenantId)) ?? null,
      subject,
      roles,
      expires_at: expiresAt === undefined ? null : rfc3339(new Date(expiresAt * 1000)),
    },
    headers: { "Cache-Control": "no-store" },
  };
};
