// Issue 13 (performance): an event's deliveries are queued by ONE graphile_worker.add_jobs call, where
// emit_event called add_job once per matching subscription (a plpgsql loop, a custom plan and a
// notification per delivery). Measured on 2 000 deliveries emitted in one statement: at fan-out 100
// about 1 000 ms → 160 ms; at fan-out 1 the same (one job per event, through add_job). docs/performance.md.
//
// - integrator.queue_delivery_jobs(tenant, delivery ids, first rank, run_at) replaces 0006's
//   queue_delivery_job as the one place a deliver_webhook job is defined and queued: payload, 10
//   attempts, the key `deliver_webhook:<delivery id>` (what every caller passed), the `tenant:<id>` flag,
//   and priority = backlog rank, the k-th id (from 0) at first rank + k, capped at 1000. emit_event
//   queues an event's deliveries with it; the task's retries and the resend operation one delivery.
// - emit_event's semantics are 0013's: the data check first, the tenant's backlog counted before the
//   insert, one delivery row per matching active subscription (a disabled one too; the task ends it
//   failed unsent), custom plans for the queueing (it holds for add_jobs called inside).
// - The functions are plpgsql: graphile-worker's schema (its job_spec type) is installed after ours
//   (app/lifecycle.ts migrateAll), and the statements of a plpgsql body are resolved when first run
//   (so no variable of that type).
import type { Knex } from "knex";

// Each text below is what this migration ran when it was written; a migration imports no other module, so
// none of them changes when another migration or a file of db/functions/ does.

/** 0006's integrator.queue_delivery_job, which the down puts back. */
const QUEUE_DELIVERY_JOB_OF_0006 = `
    create function integrator.queue_delivery_job(
      tenant_id uuid, delivery_id uuid, backlog_rank integer, run_at timestamptz default null, job_key text default null
    ) returns bigint
    language plpgsql volatile
    set plan_cache_mode = force_custom_plan
    as $$
    begin
      return (graphile_worker.add_job(
        'deliver_webhook',
        json_build_object('tenant_id', queue_delivery_job.tenant_id, 'delivery_id', queue_delivery_job.delivery_id),
        run_at => queue_delivery_job.run_at,
        max_attempts => 10,
        job_key => queue_delivery_job.job_key,
        priority => least(greatest(queue_delivery_job.backlog_rank, 0), 1000),
        flags => array['tenant:' || queue_delivery_job.tenant_id::text]
      )).id;
    end;
    $$;
`;

/** 0013's integrator.emit_event, which queues through queue_delivery_job; the down puts it back. */
const EMIT_EVENT_OF_0013 = `
    create or replace function integrator.emit_event(tenant_id uuid, kind text, data jsonb) returns integer
    language plpgsql volatile
    set plan_cache_mode = force_custom_plan
    as $$
    #variable_conflict use_column
    declare
      problem text;
      envelope jsonb;
      delivery record;
      deliveries integer := 0;
      backlog integer;
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
      backlog := integrator.delivery_backlog(emit_event.tenant_id);
      for delivery in
        insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload)
        select s.tenant_id, s.id, emit_event.kind, envelope
        from integrator.webhook_subscriptions s
        where s.tenant_id = emit_event.tenant_id
          and s.is_active
          and (emit_event.kind = any (s.events) or '*' = any (s.events))
        returning tenant_id, id
      loop
        perform integrator.queue_delivery_job(
          delivery.tenant_id, delivery.id, backlog + deliveries, job_key => 'deliver_webhook:' || delivery.id
        );
        deliveries := deliveries + 1;
      end loop;
      return deliveries;
    end;
    $$;
  `;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function integrator.queue_delivery_jobs(
      tenant_id uuid, delivery_ids uuid[], first_rank integer, run_at timestamptz default null
    ) returns integer
    language plpgsql volatile
    set plan_cache_mode = force_custom_plan
    as $$
    begin
      if coalesce(cardinality(queue_delivery_jobs.delivery_ids), 0) = 0 then
        return 0;
      end if;
      -- One delivery (fan-out 1, a retry, a resend): add_job, whose arguments are plain expressions.
      -- Building the array below is a query planned on every call (custom plans), which made emitting
      -- at fan-out 1 about 8 % slower than add_job (scripts/bench/emit-parts.ts). The same job either way.
      if cardinality(queue_delivery_jobs.delivery_ids) = 1 then
        perform graphile_worker.add_job(
          'deliver_webhook',
          json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', queue_delivery_jobs.delivery_ids[1]),
          run_at => queue_delivery_jobs.run_at,
          max_attempts => 10,
          job_key => 'deliver_webhook:' || queue_delivery_jobs.delivery_ids[1],
          priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
          flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
        );
        return 1;
      end if;
      -- Several: one insert and one notification for all of them (add_job itself is add_jobs of one spec).
      perform graphile_worker.add_jobs((
        select array_agg(row(
                 'deliver_webhook',
                 json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', d.id),
                 null,
                 queue_delivery_jobs.run_at,
                 10::smallint,
                 'deliver_webhook:' || d.id,
                 least(greatest(queue_delivery_jobs.first_rank + d.k::integer - 1, 0), 1000)::smallint,
                 array['tenant:' || queue_delivery_jobs.tenant_id::text]
               )::graphile_worker.job_spec order by d.k)
          from unnest(queue_delivery_jobs.delivery_ids) with ordinality as d(id, k)
      ));
      return cardinality(queue_delivery_jobs.delivery_ids);
    end;
    $$;

    create or replace function integrator.emit_event(tenant_id uuid, kind text, data jsonb) returns integer
    language plpgsql volatile
    set plan_cache_mode = force_custom_plan
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
        -- RFC 3339, UTC, milliseconds; the transaction's time, so every delivery of one event agrees.
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
    $$;

    drop function integrator.queue_delivery_job(uuid, uuid, integer, timestamptz, text);
  `);
}

export async function down(knex: Knex): Promise<void> {
  // Back to 0006's queue_delivery_job (one add_job per delivery) and 0013's emit_event, which uses it.
  await knex.raw(QUEUE_DELIVERY_JOB_OF_0006);
  await knex.raw(EMIT_EVENT_OF_0013);
  await knex.raw("drop function if exists integrator.queue_delivery_jobs(uuid, uuid[], integer, timestamptz)");
}
