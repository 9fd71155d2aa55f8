// A portal credential that has been refreshed is retired: it answers 401 from then on and cannot be
// refreshed a second time, so a link's credentials form one chain, and a copy of a link stops working
// once the page that holds it has moved on. A row is kept until the retired credential's own expiry (after
// which it is refused anyway), and removed as the tenant's next one is retired. Only adds a table: the
// previous release runs beside it (it just does not retire).
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table integrator.retired_portal_credentials (
      tenant_id uuid not null references integrator.tenants (id),
      credential_id uuid not null,
      expires_at timestamptz not null,
      retired_at timestamptz not null default now(),
      primary key (tenant_id, credential_id)
    );
    create index retired_portal_credentials_expiry on integrator.retired_portal_credentials (tenant_id, expires_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop table if exists integrator.retired_portal_credentials");
}
