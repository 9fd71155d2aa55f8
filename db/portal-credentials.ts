// Portal credentials retired by a refresh (refreshWebhookPortalSession): a refreshed credential is refused
// from then on, and a second refresh of it finds it retired, so each credential has one successor at most
// and a link's credentials form one chain. Kept until the retired credential's own expiry.
import type { Knex } from "knex";

/**
 * Retires a portal credential (its jti) until its expiry (seconds since the epoch). False when it was
 * retired already: another refresh of it came first. The tenant's rows past their expiry go at the same time.
 */
export async function retirePortalCredential(
  db: Knex,
  credential: { tenantId: string; credentialId: string; expiresAt: number },
): Promise<boolean> {
  const { rows } = await db.raw<{ rows: unknown[] }>(
    `with expired as (
       delete from integrator.retired_portal_credentials where tenant_id = ? and expires_at < now()
     )
     insert into integrator.retired_portal_credentials (tenant_id, credential_id, expires_at)
     values (?, ?, to_timestamp(?))
     on conflict (tenant_id, credential_id) do nothing
     returning credential_id`,
    [credential.tenantId, credential.tenantId, credential.credentialId, credential.expiresAt],
  );
  return rows.length === 1;
}

export async function portalCredentialRetired(db: Knex, tenantId: string, credentialId: string): Promise<boolean> {
  const { rows } = await db.raw<{ rows: unknown[] }>(
    "select 1 from integrator.retired_portal_credentials where tenant_id = ? and credential_id = ?",
    [tenantId, credentialId],
  );
  return rows.length > 0;
}
