// Issue 12 (hardening): users and API clients can be disabled (their tokens stop working), signing keys
// rotate (retired_at already exists), and failed password grants are counted per username for every
// replica. login_failures is keyed by a hash of the lower-cased username, known or not, so it neither
// reveals which usernames exist nor stores what guessers send; it is not tenant-owned (the password
// grant names no tenant).
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.users add column disabled_at timestamptz;
    alter table integrator.api_clients add column disabled_at timestamptz;
    create index users_disabled on integrator.users (tenant_id, id) where disabled_at is not null;
    create index api_clients_disabled on integrator.api_clients (tenant_id, client_id) where disabled_at is not null;

    create table integrator.login_failures (
      username_key text primary key,
      failures integer not null,
      last_failure_at timestamptz not null,
      locked_until timestamptz
    );
    create index login_failures_last_failure on integrator.login_failures (last_failure_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table if exists integrator.login_failures;
    drop index if exists integrator.api_clients_disabled;
    drop index if exists integrator.users_disabled;
    alter table integrator.api_clients drop column if exists disabled_at;
    alter table integrator.users drop column if exists disabled_at;
  `);
}
