// Issue 26: events with ids. Every event that is queued for at least one subscription is recorded in
// integrator.webhook_events (keyed (tenant_id, id), like every tenant-owned table), with its envelope, and
// every delivery names its event (event_id). The envelope carries the event's id as `id` (`evt_` and the
// UUID), and the worker sends it as `webhook-id`, the same for every delivery of the event, retries and
// resends included (db/functions/emit_event.sql, delivery_to_send.sql).
//
// The deliveries already retained are given events: the deliveries of one tenant with the same envelope
// (an event's deliveries to each subscription, and their resends, which copy it byte for byte) become one
// event, created when the first of them was, and each envelope gains the event's `id` (a pending one
// sends it from its next attempt on). Deliveries name their event without a foreign key: checking one
// would cost every delivery insert a look-up and a lock of its event row, and the purge deletes an event
// only once none of its deliveries is left (db/webhooks.ts purgeEventsBatch).
//
// delivery_to_send gains a column (its result type changes, so the old one is dropped here and its file
// creates the new one); emit_event keeps its signature and its file's new text replaces the old one.
import type { Knex } from "knex";

/** integrator.delivery_to_send before this migration (the down puts it back). */
const DELIVERY_TO_SEND_BEFORE = `
    create function integrator.delivery_to_send(p_tenant_id uuid, p_delivery_id uuid)
    returns table (
      id uuid, tenant_id uuid, event_type text, payload jsonb, status text, attempts integer, url text,
      subscription_active boolean, subscription_disabled boolean, subscription_disabled_by text,
      secret_encrypted text, secrets_encrypted text[]
    )
    language plpgsql stable
    as $$
    begin
      return query
      select d.id, d.tenant_id, d.event_type, d.payload, d.status, d.attempts, s.url,
             s.is_active, s.disabled_at is not null, s.disabled_by, s.secret_encrypted,
             array_remove(array[s.secret_encrypted,
                                case when s.previous_secret_expires_at > now() then s.previous_secret_encrypted end],
                          null)
        from integrator.webhook_deliveries d
        join integrator.webhook_subscriptions s on s.tenant_id = d.tenant_id and s.id = d.subscription_id
       where d.tenant_id = p_tenant_id and d.id = p_delivery_id;
    end;
    $$;`;

/** integrator.emit_event before this migration, with no event row or id (the down puts it back). */
const EMIT_EVENT_BEFORE = `
    create or replace function integrator.emit_event(tenant_id uuid, kind text, data jsonb) returns integer
    language plpgsql volatile
    as $$
    #variable_conflict use_column
    declare
      problem text;
      envelope jsonb;
      backlog integer;
      delivery_ids uuid[];
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
      backlog := integrator.delivery_backlog(emit_event.tenant_id);
      with inserted as (
        insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload)
        select s.tenant_id, s.id, emit_event.kind, envelope
          from integrator.webhook_subscriptions s
         where s.tenant_id = emit_event.tenant_id
           and s.is_active
           and (emit_event.kind = any (s.events) or '*' = any (s.events))
        returning id
      )
      select array_agg(id) into delivery_ids from inserted;
      return integrator.queue_delivery_jobs(emit_event.tenant_id, delivery_ids, backlog);
    end;
    $$;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table integrator.webhook_events (
      tenant_id uuid not null,
      id uuid not null default integrator.uuid_v7(),
      event_type text not null,
      payload jsonb not null,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id)
    );
    -- GET /v1/events: the tenant's newest first, and by kind; the purge reads the oldest of the first.
    create index webhook_events_newest on integrator.webhook_events (tenant_id, created_at desc, id desc);
    create index webhook_events_by_type on integrator.webhook_events (tenant_id, event_type, created_at desc, id desc);

    alter table integrator.webhook_deliveries add column event_id uuid;

    -- One event per tenant and envelope among the deliveries retained, created with the first of them.
    -- The CTE is read twice and so computed once: each group keeps the id it was given.
    with events as (
      select tenant_id, payload, min(event_type) as event_type, min(created_at) as created_at,
             integrator.uuid_v7() as id
        from integrator.webhook_deliveries
       group by tenant_id, payload
    ),
    recorded as (
      insert into integrator.webhook_events (tenant_id, id, event_type, payload, created_at)
      select tenant_id, id, event_type, payload || jsonb_build_object('id', 'evt_' || id), created_at from events
    )
    update integrator.webhook_deliveries d
       set event_id = e.id, payload = d.payload || jsonb_build_object('id', 'evt_' || e.id)
      from events e
     where e.tenant_id = d.tenant_id and e.payload = d.payload;

    alter table integrator.webhook_deliveries alter column event_id set not null;
    -- An event's deliveries (GET /v1/events/{event_id}, the deliveries list's event_id filter, the purge).
    create index webhook_deliveries_by_event_id on integrator.webhook_deliveries (tenant_id, event_id, created_at desc, id desc);

    drop function integrator.delivery_to_send(uuid, uuid);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function if exists integrator.delivery_to_send(uuid, uuid);
    ${DELIVERY_TO_SEND_BEFORE}
    ${EMIT_EVENT_BEFORE}
    drop index if exists integrator.webhook_deliveries_by_event_id;
    update integrator.webhook_deliveries set payload = payload - 'id' where jsonb_exists(payload, 'id');
    alter table integrator.webhook_deliveries drop column if exists event_id;
    drop table if exists integrator.webhook_events;
  `);
}
