// Tenants, the principals that can obtain tokens, the service's signing keys and worker heartbeats.
// Every tenant-owned table leads its keys with tenant_id (see docs/decisions.md §10).
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Time-ordered UUIDs (version 7) keep b-tree inserts local; works on PostgreSQL 14+.
    create or replace function integrator.uuid_v7() returns uuid language sql volatile as $$
      select encode(
        set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
          placing substring(int8send((extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
          from 1 for 6), 52, 1), 53, 1), 'hex')::uuid
    $$;

    create table integrator.tenants (
      id uuid primary key default integrator.uuid_v7(),
      name text not null,
      created_at timestamptz not null default now()
    );

    create table integrator.users (
      tenant_id uuid not null references integrator.tenants (id),
      id uuid not null default integrator.uuid_v7(),
      username text not null,
      password_hash text not null,
      roles text[] not null default '{}',
      created_at timestamptz not null default now(),
      primary key (tenant_id, id)
    );
    -- The password grant carries no tenant, so usernames are unique across tenants.
    create unique index users_username_key on integrator.users (lower(username));

    create table integrator.api_clients (
      tenant_id uuid not null references integrator.tenants (id),
      client_id text not null,
      secret_hash text not null,
      roles text[] not null default '{}',
      created_at timestamptz not null default now(),
      primary key (tenant_id, client_id)
    );
    create unique index api_clients_client_id_key on integrator.api_clients (client_id);

    create table integrator.signing_keys (
      kid text primary key,
      algorithm text not null,
      public_jwk jsonb not null,
      private_jwk_encrypted text not null,
      created_at timestamptz not null default now(),
      retired_at timestamptz
    );

    create table integrator.worker_heartbeats (
      worker_id text primary key,
      last_seen_at timestamptz not null default now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table if exists integrator.worker_heartbeats;
    drop table if exists integrator.signing_keys;
    drop table if exists integrator.api_clients;
    drop table if exists integrator.users;
    drop table if exists integrator.tenants;
    drop function if exists integrator.uuid_v7();
  `);
}
