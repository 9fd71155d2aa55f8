// The tenant-facing webhook operations of issue 11: subscription limits (one active subscription per
// URL, enforced by a unique partial index), endpoint health (auto-disable), secret rotation (the
// previous secret kept sealed during its overlap window), manual sends (redelivery and test events),
// one row per send attempt, an exact per-tenant delivery counter kept where deliveries are created and
// purged, and the indexes of the deliveries list's filters. Every key and index leads with tenant_id.
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

    -- Adds n (negative when purging) to the tenant's delivery count, in the caller's transaction. One
    -- transaction always touches the same shard (its backend's), so two never wait on each other in a cycle.
    create function integrator.count_webhook_deliveries(tenant uuid, n bigint) returns void
    language sql volatile as $$
      insert into integrator.webhook_delivery_counts as c (tenant_id, shard, deliveries)
      values (tenant, pg_backend_pid() % ${DELIVERY_COUNT_SHARDS}, n)
      on conflict (tenant_id, shard) do update set deliveries = c.deliveries + excluded.deliveries;
    $$;

    -- As in 0003_webhooks, plus: disabled subscriptions match nothing, and the tenant's delivery count
    -- grows in the same transaction. Same signature and behaviour otherwise.
    create or replace function integrator.emit_event(tenant_id uuid, kind text, data jsonb) returns integer
    language plpgsql volatile as $$
    #variable_conflict use_column
    declare
      problem text;
      envelope jsonb;
      delivery record;
      deliveries integer := 0;
    begin
      if emit_event.tenant_id is null then
        raise exception 'emit_event: tenant_id is required' using errcode = 'invalid_parameter_value';
      end if;
      problem := integrator.webhook_event_data_problem(emit_event.kind, emit_event.data);
      if problem is not null then
        raise exception 'emit_event: %', problem using errcode = 'invalid_parameter_value';
      end if;
      envelope := jsonb_build_object(
        'event', emit_event.kind,
        'tenant_id', emit_event.tenant_id,
        -- RFC 3339, UTC, milliseconds; the transaction's time, so every delivery of one event agrees.
        'timestamp', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', emit_event.data
      );
      for delivery in
        insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload)
        select s.tenant_id, s.id, emit_event.kind, envelope
        from integrator.webhook_subscriptions s
        where s.tenant_id = emit_event.tenant_id
          and s.is_active
          and s.disabled_at is null
          and (emit_event.kind = any (s.events) or '*' = any (s.events))
        returning tenant_id, id
      loop
        perform graphile_worker.add_job(
          'deliver_webhook',
          json_build_object('tenant_id', delivery.tenant_id, 'delivery_id', delivery.id),
          max_attempts => 10,
          job_key => 'deliver_webhook:' || delivery.id
        );
        deliveries := deliveries + 1;
      end loop;
      if deliveries > 0 then
        perform integrator.count_webhook_deliveries(emit_event.tenant_id, deliveries);
      end if;
      return deliveries;
    end;
    $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function integrator.emit_event(tenant_id uuid, kind text, data jsonb) returns integer
    language plpgsql volatile as $$
    #variable_conflict use_column
    declare
      problem text;
      envelope jsonb;
      delivery record;
      deliveries integer := 0;
    begin
      if emit_event.tenant_id is null then
        raise exception 'emit_event: tenant_id is required' using errcode = 'invalid_parameter_value';
      end if;
      problem := integrator.webhook_event_data_problem(emit_event.kind, emit_event.data);
      if problem is not null then
        raise exception 'emit_event: %', problem using errcode = 'invalid_parameter_value';
      end if;
      envelope := jsonb_build_object(
        'event', emit_event.kind,
        'tenant_id', emit_event.tenant_id,
        'timestamp', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', emit_event.data
      );
      for delivery in
        insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload)
        select s.tenant_id, s.id, emit_event.kind, envelope
        from integrator.webhook_subscriptions s
        where s.tenant_id = emit_event.tenant_id
          and s.is_active
          and (emit_event.kind = any (s.events) or '*' = any (s.events))
        returning tenant_id, id
      loop
        perform graphile_worker.add_job(
          'deliver_webhook',
          json_build_object('tenant_id', delivery.tenant_id, 'delivery_id', delivery.id),
          max_attempts => 10,
          job_key => 'deliver_webhook:' || delivery.id
        );
        deliveries := deliveries + 1;
      end loop;
      return deliveries;
    end;
    $$;
    drop function if exists integrator.count_webhook_deliveries(uuid, bigint);
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
