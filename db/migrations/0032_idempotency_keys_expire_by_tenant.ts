// Issue 29 (ready for Citus): the purge of expired Idempotency-Key records runs tenant by tenant (every
// statement on a tenant table names its tenant), so the index it reads leads with tenant_id:
// (tenant_id, expires_at) instead of (expires_at). The build takes a SHARE lock on idempotency_keys
// (keyed writes wait, reads do not) for as long as it runs; the table holds only unexpired keys and those
// the last purge has not reached yet (API_IDEMPOTENCY_TTL_HOURS), so it is short.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index integrator.idempotency_keys_expires_at;
    create index idempotency_keys_expires_at on integrator.idempotency_keys (tenant_id, expires_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index integrator.idempotency_keys_expires_at;
    create index idempotency_keys_expires_at on integrator.idempotency_keys (expires_at);
  `);
}
