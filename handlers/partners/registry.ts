// The partner registry the admin CLI changes: registering a partner (with its callback secret),
// entitling tenants, pausing and resuming.
import { randomBytes } from "node:crypto";
import type { Services } from "../../foundation/services.ts";
import {
  entitleTenant,
  findPartner,
  insertPartner,
  setPartnerStatus,
  type PartnerRecord,
  type PartnerStatus,
} from "../../db/partners.ts";
import { checkUrl } from "../../foundation/url-safety.ts";
import { ChangeRefused } from "../../foundation/refusals.ts";
import { PORTAL_AUDIENCE } from "../../foundation/auth/tokens.ts";

export const PARTNER_KEY = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/**
 * The prefix of the service's own names (its token audiences integrator-api and integrator-portal, its
 * OpenTelemetry service names): a partner key never starts with it, in any case, so no partner's assertion
 * audience can be, or later become, one of the service's own.
 */
export const RESERVED_PARTNER_KEY_PREFIX = "integrator-";
const CONTEXT_KEY = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;
const MAX_CONTEXT_KEYS = 50;

/** Launch URLs are absolute https URLs (http only on a loopback host, for local development), without credentials. */
export function launchUrlProblem(raw: string): string | undefined {
  const verdict = checkUrl(raw, { name: "launch_url", allowLoopbackHttp: true, maxLength: 2048 });
  return verdict.ok ? undefined : verdict.message;
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
    throw new ChangeRefused(
      "partner_key",
      "partner_key must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
    );
  // The assertion's audience is the partner key: one of the service's own audiences would make it an
  // access token or a portal credential.
  for (const audience of [services.config.selfAudience, PORTAL_AUDIENCE])
    if (input.partnerKey === audience)
      throw new ChangeRefused(
        "partner_key",
        `partner_key must not be an audience of the service's own tokens (${audience})`,
      );
  if (input.partnerKey.toLowerCase().startsWith(RESERVED_PARTNER_KEY_PREFIX))
    throw new ChangeRefused(
      "partner_key",
      `partner_key must not start with "${RESERVED_PARTNER_KEY_PREFIX}" (in any case): the prefix is reserved for the service's own names, such as its token audiences`,
    );
  if (input.name.length > 200) throw new ChangeRefused("name", "name must be at most 200 characters");
  const urlProblem = launchUrlProblem(input.launchUrl);
  if (urlProblem) throw new ChangeRefused("launch_url", urlProblem);
  const contextKeys = [...new Set(input.contextKeys)];
  const badKey = contextKeys.find((key) => !CONTEXT_KEY.test(key));
  if (badKey !== undefined)
    throw new ChangeRefused(
      "context_keys",
      `context_keys: "${badKey}" is not a key (1 to 64 letters, digits, '_', '.' or '-', not starting with a digit)`,
    );
  if (contextKeys.length > MAX_CONTEXT_KEYS)
    throw new ChangeRefused("context_keys", `context_keys takes at most ${MAX_CONTEXT_KEYS} keys`);
  const callbackSecret = `pcs_${randomBytes(32).toString("base64url")}`;
  const partner = await insertPartner(services.db, {
    partnerKey: input.partnerKey,
    name: input.name,
    launchUrl: input.launchUrl,
    contextKeys,
    callbackSecretEncrypted: services.secretBox.seal(callbackSecret),
  });
  if (!partner) throw new ChangeRefused("partner_key", `partner ${input.partnerKey} exists already`);
  return { ...partner, callback_secret: callbackSecret };
}

export async function entitlePartner(
  services: Services,
  tenantId: string,
  partnerKey: string,
): Promise<{ tenant_id: string; partner_key: string; newly_entitled: boolean }> {
  if (!(await findPartner(services.db, partnerKey)))
    throw new ChangeRefused("partner_key", `partner ${partnerKey} does not exist`);
  const newlyEntitled = await entitleTenant(services.db, tenantId, partnerKey);
  return { tenant_id: tenantId, partner_key: partnerKey, newly_entitled: newlyEntitled };
}

export async function changePartnerStatus(
  services: Services,
  partnerKey: string,
  status: PartnerStatus,
): Promise<PartnerRecord> {
  const partner = await setPartnerStatus(services.db, partnerKey, status);
  if (!partner) throw new ChangeRefused("partner_key", `partner ${partnerKey} does not exist`);
  return partner;
}
