// A signing key can be revoked (`signing-key:rotate --revoke-previous`, for a key that leaked): a revoked
// key neither verifies nor is published in the JWKS, however recently it was retired.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw("alter table integrator.signing_keys add column revoked_at timestamptz");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("alter table integrator.signing_keys drop column revoked_at");
}
