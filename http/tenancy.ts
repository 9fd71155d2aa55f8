// The tenant an operation acts on: the token's own, or (for platform_admin only) the one named by
// the tenant_id query parameter (docs/decisions.md §2).
import type { Principal } from "../foundation/auth/tokens.ts";
import { ApiError } from "./errors.ts";

export function effectiveTenant(principal: Principal, requested: string | undefined): string {
  if (requested === undefined) return principal.tenantId;
  const tenantId = requested.toLowerCase();
  if (tenantId === principal.tenantId || principal.roles.includes("platform_admin")) return tenantId;
  throw new ApiError("FORBIDDEN", "tenant_id must be the token's own tenant unless the caller is a platform_admin");
}
