// First start on an empty embedded database: a demo tenant with a client_admin user, and a curl line
// with a fresh token and a webhook portal link so the service can be tried at once. Never in production
// (config.seedDemo).
import { randomBytes } from "node:crypto";
import { countTenants, createTenant, findUserByUsername } from "../db/principals.ts";
import { registerUser } from "../handlers/auth/principals.ts";
import type { Services } from "../server/services.ts";

export const DEMO_USERNAME = "demo-admin";

export async function seedDemoTenant(services: Services): Promise<{ username: string; password: string } | undefined> {
  if ((await countTenants(services.db)) > 0) return undefined;
  const tenant = await createTenant(services.db, "Demo tenant");
  const password = randomBytes(12).toString("base64url");
  await registerUser(services.db, { tenantId: tenant.id, username: DEMO_USERNAME, password, roles: ["client_admin"] });
  return { username: DEMO_USERNAME, password };
}

/** A ready-to-paste intake call with a token for the demo user, valid for one day (or the longest lifetime allowed). */
export async function demoCurlLine(services: Services, baseUrl: string): Promise<string | undefined> {
  const user = await findUserByUsername(services.db, DEMO_USERNAME);
  if (!user) return undefined;
  const { token } = await services.tokens.issue({
    subject: user.id,
    tenantId: user.tenant_id,
    roles: user.roles,
    expiresInSeconds: Math.min(86400, services.config.maxTokenLifetimeSeconds),
  });
  const body = JSON.stringify({
    filename: "contract.pdf",
    file_size: 48213,
    mime_type: "application/pdf",
    external_reference: "demo-1",
  });
  return `curl -s -X POST ${baseUrl}/v1/intake/submit -H 'Authorization: Bearer ${token}' -H 'Content-Type: application/json' -d '${body}'`;
}

/** A webhook portal link for the demo tenant, valid for PORTAL_SESSION_TTL_MINUTES (as POST /v1/webhooks/portal-sessions makes). */
export async function demoPortalLink(services: Services, baseUrl: string): Promise<string | undefined> {
  const user = await findUserByUsername(services.db, DEMO_USERNAME);
  if (!user) return undefined;
  const { token } = await services.tokens.issuePortal({
    subject: user.id,
    tenantId: user.tenant_id,
    expiresInSeconds: services.config.portal.sessionTtlMinutes * 60,
  });
  return `${baseUrl}/portal#token=${token}`;
}
