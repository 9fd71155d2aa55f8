// The service's ES256 signing keys, shared by every process through the database: the newest key that
// is not retired signs; retired keys keep verifying (and stay in the JWKS) until the tokens they signed
// have expired; `signing-key:rotate` adds a key and retires the others, and with --revoke-previous also
// revokes them: a revoked key stops verifying (and leaves the JWKS) at once.
import type { Knex } from "knex";
import { recordAudit, SERVICE_AUDIT_TENANT_ID } from "./audit.ts";

export interface StoredSigningKey {
  kid: string;
  algorithm: string;
  public_jwk: Record<string, unknown>;
  private_jwk_encrypted: string;
}

/** Keys that verify: the active ones and those retired within `retiredWithinSeconds`, never revoked ones; newest first. */
export async function verificationSigningKeys(
  db: Knex,
  retiredWithinSeconds: number,
): Promise<(StoredSigningKey & { retired_at: Date | null })[]> {
  return db("integrator.signing_keys")
    .whereNull("revoked_at")
    .andWhereRaw("(retired_at is null or retired_at > now() - make_interval(secs => ?))", [retiredWithinSeconds])
    .orderBy("created_at", "desc")
    .select("kid", "algorithm", "public_jwk", "private_jwk_encrypted", "retired_at");
}

/**
 * Adds a new signing key and retires every other active one, in one transaction. With `revokePrevious`,
 * every earlier key not yet revoked (retired ones still verifying included) is revoked too. The same
 * transaction records the audit action `auth.signing_key_rotated` of `actor` among the service's own
 * (SERVICE_AUDIT_TENANT_ID): the key ids, never a key.
 */
export async function rotateSigningKey(
  db: Knex,
  make: () => Promise<StoredSigningKey>,
  options: { revokePrevious?: boolean; actor: string },
): Promise<{ kid: string; retired: string[]; revoked: string[] }> {
  return db.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(hashtext('integrator.signing_keys'))");
    const key = await make();
    const retired = (await trx("integrator.signing_keys")
      .whereNull("retired_at")
      .update({ retired_at: trx.fn.now() })
      .returning("kid")) as { kid: string }[];
    const revoked = options.revokePrevious
      ? ((await trx("integrator.signing_keys")
          .whereNull("revoked_at")
          .update({ revoked_at: trx.fn.now() })
          .returning("kid")) as { kid: string }[])
      : [];
    await trx("integrator.signing_keys").insert(key);
    const rotation = { kid: key.kid, retired: retired.map((row) => row.kid), revoked: revoked.map((row) => row.kid) };
    await recordAudit(trx, {
      tenantId: SERVICE_AUDIT_TENANT_ID,
      action: "auth.signing_key_rotated",
      actor: options.actor,
      resourceType: "signing_key",
      resourceId: key.kid,
      requestId: undefined,
      details: {
        retired: rotation.retired,
        revoked: rotation.revoked,
        revoke_previous: options.revokePrevious === true,
      },
    });
    return rotation;
  });
}

export async function activeSigningKeys(db: Knex): Promise<StoredSigningKey[]> {
  return db("integrator.signing_keys")
    .whereNull("retired_at")
    .orderBy("created_at", "desc")
    .select("kid", "algorithm", "public_jwk", "private_jwk_encrypted");
}

/** Inserts the key unless another process created one first (serialised by an advisory lock). */
export async function createSigningKeyOnce(
  db: Knex,
  make: () => Promise<StoredSigningKey>,
): Promise<StoredSigningKey[]> {
  return db.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(hashtext('integrator.signing_keys'))");
    const existing = await activeSigningKeys(trx);
    if (existing.length > 0) return existing;
    const key = await make();
    await trx("integrator.signing_keys").insert(key);
    return [key];
  });
}
