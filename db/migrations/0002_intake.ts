// Intake submissions and their items, remembered idempotent responses, and the audit trail.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table integrator.intake_submissions (
      tenant_id uuid not null references integrator.tenants (id),
      id uuid not null default integrator.uuid_v7(),
      external_reference text,
      module text,
      tier text,
      kind text not null check (kind in ('single', 'batch')),
      item_count integer not null,
      accepted_count integer not null,
      failed_count integer not null,
      status text not null,
      created_by text not null,
      request_id text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, id)
    );

    create table integrator.intake_items (
      tenant_id uuid not null,
      id uuid not null default integrator.uuid_v7(),
      submission_id uuid not null,
      position integer not null,
      document_id text,
      filename text not null,
      file_size bigint not null check (file_size > 0),
      mime_type text not null,
      item_metadata jsonb,
      status text not null check (status in ('pending', 'uploaded', 'processing', 'completed', 'failed', 'rejected')),
      error_message text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, id),
      foreign key (tenant_id, submission_id) references integrator.intake_submissions (tenant_id, id) on delete cascade
    );
    create unique index intake_items_submission_position on integrator.intake_items (tenant_id, submission_id, position);
    -- item:link and item:status address an item by id alone (operators do not know the tenant).
    create unique index intake_items_id on integrator.intake_items (id);

    -- One row per remembered 201: keyed by tenant, subject, route and key (docs/decisions.md §4).
    create table integrator.idempotency_keys (
      tenant_id uuid not null,
      subject text not null,
      route text not null,
      idempotency_key text not null,
      fingerprint text not null,
      status_code integer not null,
      response_body jsonb not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      primary key (tenant_id, subject, route, idempotency_key)
    );
    create index idempotency_keys_expires_at on integrator.idempotency_keys (expires_at);

    create table integrator.audit_actions (
      tenant_id uuid not null,
      id uuid not null default integrator.uuid_v7(),
      action text not null,
      actor text not null,
      resource_type text not null,
      resource_id text not null,
      request_id text,
      details jsonb,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id)
    );
    create index audit_actions_by_action on integrator.audit_actions (tenant_id, action, created_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table if exists integrator.audit_actions;
    drop table if exists integrator.idempotency_keys;
    drop table if exists integrator.intake_items;
    drop table if exists integrator.intake_submissions;
  `);
}
