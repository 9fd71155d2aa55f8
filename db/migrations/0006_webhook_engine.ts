// The delivery engine's fairness and crash recovery (docs/architecture.md, fairness between tenants and crash recovery).
//
// - integrator.queue_delivery_job: the one place a deliver_webhook job is queued (emit_event for the
//   first attempt, the task for retries). The job's priority is the tenant's backlog rank (its pending
//   deliveries, counted up to 1000), so graphile-worker, which takes jobs by priority then run_at,
//   serves every tenant's k-th waiting delivery before any tenant's (k+1)-th: a tenant with a backlog
//   never pushes another tenant's fresh delivery behind it. The flag `tenant:<id>` lets a worker refuse
//   a tenant's jobs while that tenant holds its share of the worker's slots (worker/fairness.ts).
// - Both functions run with plan_cache_mode = force_custom_plan, which also holds for graphile_worker.add_job
//   called inside them. add_job's inner statements are plpgsql and cache a generic plan per
//   connection; one planned while the job table was small keeps seq-scanning it as a backlog grows
//   (measured: every add_job read all 10,000 queued jobs). Custom plans see the table as it is.
// - worker_heartbeats.runner_ids: the graphile-worker pool ids (jobs' locked_by) of each worker, so the
//   jobs of a worker whose heartbeat stopped can be released (graphile_worker.force_unlock_workers).
import type { Knex } from "knex";

/** integrator.queue_delivery_job as this migration creates it (0016's down creates it again, from its own copy). */
const QUEUE_DELIVERY_JOB = `
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

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.worker_heartbeats add column runner_ids text[] not null default '{}';

    -- A tenant's backlog: its pending deliveries, counted up to 1000 (bounded cost for huge backlogs).
    create function integrator.delivery_backlog(tenant_id uuid) returns integer
    language sql stable as $$
      select count(*)::integer from (
        select 1 from integrator.webhook_deliveries d
         where d.tenant_id = delivery_backlog.tenant_id and d.status = 'pending'
         limit 1000
      ) backlog
    $$;

    ${QUEUE_DELIVERY_JOB}

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
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function if exists integrator.queue_delivery_job(uuid, uuid, integer, timestamptz, text);
    drop function if exists integrator.delivery_backlog(uuid);
    alter table integrator.worker_heartbeats drop column if exists runner_ids;
  `);
}
