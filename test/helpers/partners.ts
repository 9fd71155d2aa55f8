// Partners for tests: registered through the same code as `npm run admin -- partner:create`, and
// callbacks signed the way the contract describes.
import { randomBytes } from "node:crypto";
import type { Services } from "../../foundation/services.ts";
import { canonicalJson } from "../../foundation/canonical-json.ts";
import { hmacSha256Hex } from "../../foundation/signing.ts";
import { entitlePartner, registerPartner } from "../../handlers/partners/registry.ts";

export interface TestPartner {
  partnerKey: string;
  callbackSecret: string;
  launchUrl: string;
  contextKeys: string[];
}

export async function createTestPartner(
  services: Services,
  options: { partnerKey?: string; launchUrl?: string; contextKeys?: string[]; entitle?: string[] } = {},
): Promise<TestPartner> {
  const partnerKey = options.partnerKey ?? `partner-${randomBytes(4).toString("hex")}`;
  const launchUrl = options.launchUrl ?? `https://${partnerKey}.example.com/sso/launch`;
  const contextKeys = options.contextKeys ?? ["employee_id", "plan", "is_manager"];
  const created = await registerPartner(services, {
    partnerKey,
    name: `Partner ${partnerKey}`,
    launchUrl,
    contextKeys,
  });
  for (const tenantId of options.entitle ?? []) await entitlePartner(services, tenantId, partnerKey);
  return { partnerKey, callbackSecret: created.callback_secret, launchUrl, contextKeys };
}

/** Hex HMAC-SHA256 over the canonical {tenant_id, partner_key, payload}; UTF-8 unless asciiOnly. */
export function signCallback(
  secret: string,
  partnerKey: string,
  body: { tenant_id: string; payload: unknown },
  options: { asciiOnly?: boolean } = {},
): string {
  return hmacSha256Hex(
    secret,
    canonicalJson({ tenant_id: body.tenant_id, partner_key: partnerKey, payload: body.payload }, options),
  );
}
