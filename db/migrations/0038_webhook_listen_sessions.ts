// Listen sessions: a webhook endpoint of a tenant without a URL, whose deliveries a program of the tenant's
// (the contract package's `listen` command) takes over an outbound connection and forwards to a local
// receiver. A session is a row of webhook_subscriptions with transport 'listen', so that emit_event, the
// deliveries, their jobs and their attempts treat it as any subscription; it has no url and ends at
// expires_at unless polled (an 'https' subscription has a url and no expires_at).
//
// integrator.webhook_listen_offers holds the attempt the worker signed and offered to a session, one per
// delivery at a time: the exact body and headers, when it was offered and must be answered by, when a
// poll handed it out, and the answer the listener reported, until the worker records the attempt and
// deletes the offer. Keyed like every tenant-owned table (tenant_id first), gone with its delivery.
//
// Added, not changed: the previous release writes 'https' subscriptions as before (the defaults), and
// lists or sends a session's row never, since only this release makes them.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.webhook_subscriptions
      add column transport text not null default 'https'
        constraint webhook_subscriptions_transport check (transport in ('https', 'listen')),
      add column expires_at timestamptz,
      alter column url drop not null,
      add constraint webhook_subscriptions_transport_target
        check (case transport when 'https' then url is not null and expires_at is null
                              else url is null and expires_at is not null end);

    create table integrator.webhook_listen_offers (
      tenant_id uuid not null,
      delivery_id uuid not null,
      subscription_id uuid not null,
      attempt integer not null check (attempt >= 1),
      body text not null,
      headers jsonb not null,
      offered_at timestamptz not null,
      answer_by timestamptz not null,
      handed_out_at timestamptz,
      answered_at timestamptz,
      response_code integer check (response_code between 100 and 599),
      error_class text check (error_class in ('timeout', 'connection_failed')),
      duration_ms integer check (duration_ms >= 0),
      response_headers jsonb,
      response_body text,
      response_body_truncated boolean not null default false,
      primary key (tenant_id, delivery_id),
      foreign key (tenant_id, delivery_id) references integrator.webhook_deliveries (tenant_id, id) on delete cascade,
      foreign key (tenant_id, subscription_id) references integrator.webhook_subscriptions (tenant_id, id)
        on delete cascade
    );
    -- A poll takes its session's offers not yet handed out, oldest first.
    create index webhook_listen_offers_waiting
      on integrator.webhook_listen_offers (tenant_id, subscription_id, offered_at)
      where handed_out_at is null;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table if exists integrator.webhook_listen_offers;
    delete from integrator.webhook_deliveries d
     using integrator.webhook_subscriptions s
     where s.tenant_id = d.tenant_id and s.id = d.subscription_id and s.transport = 'listen';
    delete from integrator.webhook_subscriptions where transport = 'listen';
    alter table integrator.webhook_subscriptions
      drop constraint if exists webhook_subscriptions_transport_target,
      alter column url set not null,
      drop column if exists expires_at,
      drop column if exists transport;
  `);
}
