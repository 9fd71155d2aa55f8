// The partner registry, tenant entitlements, routing decisions and received partner callbacks
// (docs/decisions.md §7). Partners are not tenant-owned; everything else leads its keys with tenant_id (docs/decisions.md §10).
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table integrator.partners (
      partner_key text primary key check (partner_key ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
      name text not null,
      launch_url text not null,
      context_keys text[] not null default '{}',
      callback_secret_encrypted text not null,
      status text not null default 'active' check (status in ('active', 'paused')),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );

    create table integrator.partner_entitlements (
      tenant_id uuid not null references integrator.tenants (id),
      partner_key text not null references integrator.partners (partner_key),
      created_at timestamptz not null default now(),
      primary key (tenant_id, partner_key)
    );

    -- One row per launch or switch decision, routed or denied. No foreign key on tenant_id: a token of an
    -- external identity provider may name a tenant this database has never registered (it is then denied).
    create table integrator.routing_decisions (
      tenant_id uuid not null,
      id uuid not null default integrator.uuid_v7(),
      kind text not null check (kind in ('launch', 'switch')),
      partner_key text not null,
      result text not null check (result in ('routed', 'denied')),
      reason text check (reason in ('NOT_ENTITLED', 'PARTNER_PAUSED')),
      correlation_id text not null,
      return_url text,
      expires_at timestamptz,
      created_by text not null,
      request_id text,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id),
      check ((result = 'routed') = (reason is null))
    );
    create index routing_decisions_by_correlation on integrator.routing_decisions (tenant_id, correlation_id);

    -- event_key is a hash of the event's identity (payload.event_id, else payload.id, else the signed
    -- object), so "insert ... on conflict do nothing" processes every event exactly once.
    create table integrator.partner_callbacks (
      tenant_id uuid not null references integrator.tenants (id),
      id uuid not null default integrator.uuid_v7(),
      partner_key text not null references integrator.partners (partner_key),
      event_key text not null,
      event text not null,
      payload jsonb not null,
      request_id text,
      received_at timestamptz not null default now(),
      primary key (tenant_id, id)
    );
    create unique index partner_callbacks_event on integrator.partner_callbacks (tenant_id, partner_key, event_key);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table if exists integrator.partner_callbacks;
    drop table if exists integrator.routing_decisions;
    drop table if exists integrator.partner_entitlements;
    drop table if exists integrator.partners;
  `);
}
