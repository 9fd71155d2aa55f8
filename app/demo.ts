// First start on an empty embedded database: a demo tenant with a client_admin user, shown once with a
// curl line holding a short-lived token and a webhook portal link, so the service can be tried at once.
// Later starts print how to get a token with that user, and no token: a long-lived credential on every
// start's terminal (and in whatever collects it) would outlive the try; and the admin command that makes a
// new portal link (`portal:link`, both links made by createPortalLink). Never in production (config.seedDemo).
import { randomBytes } from "node:crypto";
import { countTenants, createTenant, findUserByUsername } from "../db/principals.ts";
import { registerUser } from "../handlers/auth/principals.ts";
import { createPortalLink } from "../handlers/webhooks/portal-sessions.ts";
import type { Services } from "../foundation/services.ts";

export const DEMO_USERNAME = "demo-admin";
/** The first start's token lives this long at most (or ACCESS_TOKEN_TTL_SECONDS when that is shorter). */
const DEMO_TOKEN_SECONDS = 15 * 60;

async function seedDemoTenant(services: Services): Promise<{ username: string; password: string } | undefined> {
  if ((await countTenants(services.db)) > 0) return undefined;
  const tenant = await createTenant(services.db, "Demo tenant");
  const password = randomBytes(12).toString("base64url");
  await registerUser(services.db, { tenantId: tenant.id, username: DEMO_USERNAME, password, roles: ["client_admin"] });
  return { username: DEMO_USERNAME, password };
}

const DEMO_BODY = JSON.stringify({
  filename: "contract.pdf",
  file_size: 48213,
  mime_type: "application/pdf",
  external_reference: "demo-1",
});

/** A ready-to-paste intake call with a short-lived token for the demo user. */
async function demoCurlLine(services: Services, baseUrl: string): Promise<string | undefined> {
  const user = await findUserByUsername(services.db, DEMO_USERNAME);
  if (!user) return undefined;
  const { token } = await services.tokens.issue({
    subject: user.id,
    tenantId: user.tenant_id,
    roles: user.roles,
    expiresInSeconds: Math.min(DEMO_TOKEN_SECONDS, services.config.accessTokenTtlSeconds),
  });
  return `curl -s -X POST ${baseUrl}/v1/intake/submit -H 'Authorization: Bearer ${token}' -H 'Content-Type: application/json' -d '${DEMO_BODY}'`;
}

/**
 * What a development start prints for a person at a terminal: on the first start (an empty database,
 * seeded here) the demo user and its password, shown once, a curl line with a short-lived token and a
 * portal link; on a later start how to get a token with the demo user, without one, and a portal link with
 * the admin CLI; nothing when there is no demo user.
 */
export async function demoHints(services: Services, baseUrl: string): Promise<string> {
  const seeded = await seedDemoTenant(services);
  const user = await findUserByUsername(services.db, DEMO_USERNAME);
  if (!user) return "";
  // The first start's portal link expires; the admin CLI makes a new one for the same tenant.
  const newPortalLink = `npm run admin -- portal:link --tenant ${user.tenant_id}`;
  if (seeded) {
    const curl = await demoCurlLine(services, baseUrl);
    const portal = await demoPortalLink(services, baseUrl);
    return (
      `Seeded a demo tenant. Demo user: ${seeded.username} / ${seeded.password} (shown once)\nTry it (the token lives ${Math.round(Math.min(DEMO_TOKEN_SECONDS, services.config.accessTokenTtlSeconds) / 60)} minutes):\n${curl ?? ""}\n` +
      `The demo tenant's webhook portal (the link is valid for ${services.config.portal.sessionTtlMinutes} minutes; the page can extend it; a new link: ${newPortalLink}):\n${portal ?? ""}\n`
    );
  }
  return (
    `Demo user: ${DEMO_USERNAME} (its password was shown on the first start). A token:\ncurl -s -X POST ${baseUrl}/token -d grant_type=password -d username=${DEMO_USERNAME} --data-urlencode password=...\n` +
    `A link to the demo tenant's webhook portal: ${newPortalLink}\n`
  );
}

/** A webhook portal link for the demo tenant, made by the demo user as POST /v1/webhooks/portal-sessions makes one. */
async function demoPortalLink(services: Services, baseUrl: string): Promise<string | undefined> {
  const user = await findUserByUsername(services.db, DEMO_USERNAME);
  if (!user) return undefined;
  const link = await createPortalLink(services, {
    subject: user.id,
    tenantId: user.tenant_id,
    creatorTenantId: user.tenant_id,
    baseUrl,
    requestId: undefined,
  });
  return link.url;
}
