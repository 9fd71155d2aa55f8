// The tenant-facing webhook operations of issue 11: subscription limits (one active subscription per
// URL, enforced by a unique partial index), endpoint health (auto-disable), secret rotation (the
// previous secret kept sealed during its overlap window), manual sends (redelivery and test events),
// one row per send attempt, an exact per-tenant delivery counter kept by triggers in the transactions
// that create and purge deliveries, and the indexes of the deliveries list's filters. Every key and
// index leads with tenant_id. integrator.emit_event is not replaced here (migration 0006 owns it).
import type { Knex } from "knex";

/** Counter rows per tenant: a transaction adds to the row of its own backend, so concurrent intakes of one tenant do not queue on one row. */
export const DELIVERY_COUNT_SHARDS = 16;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.webhook_subscriptions
      add column disabled_at timestamptz,
      add column disabled_reason text check (char_length(disabled_reason) <= 500),
      add column consecutive_failed_deliveries integer not null default 0,
      add column failing_since timestamptz,
      add column previous_secret_encrypted text,
      add column previous_secret_expires_at timestamptz;

    -- One active subscription per URL and tenant from now on: older duplicates are deactivated (the oldest
    -- one of each URL stays), as a DELETE would; the worker fails their pending deliveries.
    with ranked as (
      select tenant_id, id, row_number() over (partition by tenant_id, url order by created_at, id) as position
        from integrator.webhook_subscriptions
       where is_active
    )
    update integrator.webhook_subscriptions s
       set is_active = false, deactivated_at = now()
      from ranked r
     where r.tenant_id = s.tenant_id and r.id = s.id and r.position > 1;
    create unique index webhook_subscriptions_active_url on integrator.webhook_subscriptions (tenant_id, url) where is_active;

    alter table integrator.webhook_deliveries
      add column origin text not null default 'event' check (origin in ('event', 'redelivery', 'test')),
      add column redelivery_of uuid;
    -- The deliveries list's filters, each a keyset on (created_at, id) like webhook_deliveries_newest.
    create index webhook_deliveries_by_subscription on integrator.webhook_deliveries (tenant_id, subscription_id, created_at desc, id desc);
    create index webhook_deliveries_by_status on integrator.webhook_deliveries (tenant_id, status, created_at desc, id desc);
    create index webhook_deliveries_by_event on integrator.webhook_deliveries (tenant_id, event_type, created_at desc, id desc);
    -- The manual-send rate limit counts a tenant's recent redeliveries and test events.
    create index webhook_deliveries_manual on integrator.webhook_deliveries (tenant_id, created_at) where origin <> 'event';

    create table integrator.webhook_delivery_attempts (
      tenant_id uuid not null,
      delivery_id uuid not null,
      number integer not null check (number >= 1),
      attempted_at timestamptz not null,
      duration_ms integer not null check (duration_ms >= 0),
      outcome text not null check (outcome in ('delivered', 'failed')),
      response_code integer,
      error_class text check (error_class in ('timeout', 'connection_failed', 'tls_failed', 'http_status')),
      primary key (tenant_id, delivery_id, number),
      foreign key (tenant_id, delivery_id) references integrator.webhook_deliveries (tenant_id, id) on delete cascade
    );

    -- The exact number of a tenant's deliveries is the sum of its rows here (at most ${DELIVERY_COUNT_SHARDS}).
    create table integrator.webhook_delivery_counts (
      tenant_id uuid not null,
      shard smallint not null,
      deliveries bigint not null,
      primary key (tenant_id, shard)
    );
    -- Counted under a lock that keeps out concurrent inserts, so the first count is exact.
    lock table integrator.webhook_deliveries in share row exclusive mode;
    insert into integrator.webhook_delivery_counts (tenant_id, shard, deliveries)
    select tenant_id, 0, count(*) from integrator.webhook_deliveries group by tenant_id;

    -- The counter follows every insert and delete of deliveries, in the statement's own transaction,
    -- whoever runs it: integrator.emit_event (left as it is, so the delivery engine's version of it
    -- stands), manual sends, the purge. One transaction always adds to its backend's shard, so two
    -- never wait on each other's rows in a cycle.
    create function integrator.count_inserted_webhook_deliveries() returns trigger
    language plpgsql as $$
    begin
      insert into integrator.webhook_delivery_counts as c (tenant_id, shard, deliveries)
      select tenant_id, pg_backend_pid() % ${DELIVERY_COUNT_SHARDS}, count(*) from inserted group by tenant_id order by tenant_id
      on conflict (tenant_id, shard) do update set deliveries = c.deliveries + excluded.deliveries;
      return null;
    end;
    $$;
    create function integrator.count_deleted_webhook_deliveries() returns trigger
    language plpgsql as $$
    begin
      insert into integrator.webhook_delivery_counts as c (tenant_id, shard, deliveries)
      select tenant_id, pg_backend_pid() % ${DELIVERY_COUNT_SHARDS}, -count(*) from deleted group by tenant_id order by tenant_id
      on conflict (tenant_id, shard) do update set deliveries = c.deliveries + excluded.deliveries;
      return null;
    end;
    $$;
    create trigger webhook_deliveries_count_inserted after insert on integrator.webhook_deliveries
      referencing new table as inserted for each statement execute function integrator.count_inserted_webhook_deliveries();
    create trigger webhook_deliveries_count_deleted after delete on integrator.webhook_deliveries
      referencing old table as deleted for each statement execute function integrator.count_deleted_webhook_deliveries();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger if exists webhook_deliveries_count_deleted on integrator.webhook_deliveries;
    drop trigger if exists webhook_deliveries_count_inserted on integrator.webhook_deliveries;
    drop function if exists integrator.count_deleted_webhook_deliveries();
    drop function if exists integrator.count_inserted_webhook_deliveries();
    drop table if exists integrator.webhook_delivery_counts;
    drop table if exists integrator.webhook_delivery_attempts;
    drop index if exists integrator.webhook_deliveries_manual;
    drop index if exists integrator.webhook_deliveries_by_event;
    drop index if exists integrator.webhook_deliveries_by_status;
    drop index if exists integrator.webhook_deliveries_by_subscription;
    alter table integrator.webhook_deliveries drop column redelivery_of, drop column origin;
    drop index if exists integrator.webhook_subscriptions_active_url;
    alter table integrator.webhook_subscriptions
      drop column previous_secret_expires_at,
      drop column previous_secret_encrypted,
      drop column failing_since,
      drop column consecutive_failed_deliveries,
      drop column disabled_reason,
      drop column disabled_at;
  `);
}
