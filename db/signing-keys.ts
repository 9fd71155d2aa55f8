// The service's ES256 signing key: created once, shared by every process through the database.
import type { Knex } from "knex";

export interface StoredSigningKey {
  kid: string;
  algorithm: string;
  public_jwk: Record<string, unknown>;
  private_jwk_encrypted: string;
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
