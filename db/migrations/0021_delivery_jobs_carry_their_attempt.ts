// Issue 13 (performance): a deliver_webhook job carries the attempt it is for, instead of a job key.
//
// Since 0003 every job had the key `deliver_webhook:<delivery id>`, so that the retry queued while a job
// still runs supersedes it (graphile-worker sets a running keyed job's attempts to its maximum): a
// worker that died after recording an attempt, before completing its job, left a job that must not send
// again beside the scheduled retry. A keyed add_job cost about 0.35 ms of PostgreSQL more per job than
// one without (docs/performance.md, changes the figures justify), a sixth of a delivery's PostgreSQL time.
//
// Now the payload says how many attempts the delivery had when the job was queued (`attempts`: 0 from
// emit_event and resend, n after the n-th attempt's retry), and the task sends only while the delivery
// still has exactly that many (worker/tasks/deliver_webhook.ts); a job whose attempt another run already
// recorded finds a higher count and does nothing. The same guarantee, checked where the delivery is
// read anyway, and the leftover job completes instead of staying in the queue with its attempts spent.
// Jobs queued before this migration carry no `attempts` and keep their key; the task runs them as before.
//
// queue_delivery_jobs keeps plan_cache_mode = force_custom_plan: add_jobs still runs its key statement
// (for no key), and its generic plan scans the job table (pg_stat_statements: 420 ms against 67 ms over
// 11 000 calls with a backlog of 2 000).
import type { Knex } from "knex";

/** integrator.queue_delivery_jobs without a key: the payload names the attempt (`attempts`, 0 by default). */
const QUEUE_DELIVERY_JOBS = `
    create function integrator.queue_delivery_jobs(
      tenant_id uuid, delivery_ids uuid[], first_rank integer, run_at timestamptz default null, attempts integer default 0
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
          json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', queue_delivery_jobs.delivery_ids[1], 'attempts', queue_delivery_jobs.attempts),
          run_at => queue_delivery_jobs.run_at,
          max_attempts => 10,
          job_key => null,
          priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
          flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
        );
        return 1;
      end if;
      -- Several: one insert and one notification for all of them (add_job itself is add_jobs of one spec).
      perform graphile_worker.add_jobs((
        select array_agg(row(
                 'deliver_webhook',
                 json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', d.id, 'attempts', queue_delivery_jobs.attempts),
                 null,
                 queue_delivery_jobs.run_at,
                 10::smallint,
                 null,
                 least(greatest(queue_delivery_jobs.first_rank + d.k::integer - 1, 0), 1000)::smallint,
                 array['tenant:' || queue_delivery_jobs.tenant_id::text]
               )::graphile_worker.job_spec order by d.k)
          from unnest(queue_delivery_jobs.delivery_ids) with ordinality as d(id, k)
      ));
      return cardinality(queue_delivery_jobs.delivery_ids);
    end;
    $$;`;

/** integrator.record_delivery_attempt queueing a retry's job for the attempt after this one. */
const RECORD_DELIVERY_ATTEMPT = `
    create or replace function integrator.record_delivery_attempt(
      p_tenant_id uuid, p_delivery_id uuid, p_attempts_before integer, p_status text, p_attempted_at timestamptz,
      p_duration_ms integer, p_response_code integer, p_error_message text, p_error_class text,
      p_retry_at timestamptz, p_failed_in_a_row integer, p_failing_days float8
    ) returns boolean
    language plpgsql volatile as $$
    declare
      delivered constant boolean := p_status = 'delivered';
      delivery_failed constant boolean := p_status = 'failed';
      was_recorded boolean;
    begin
      with recorded as (
        update integrator.webhook_deliveries
           set status = p_status, attempts = attempts + 1, last_attempt_at = p_attempted_at,
               response_code = p_response_code, error_message = p_error_message, updated_at = now()
         where tenant_id = p_tenant_id and id = p_delivery_id and status = 'pending' and attempts = p_attempts_before
        returning tenant_id, id, subscription_id, attempts
      ),
      history as (
        insert into integrator.webhook_delivery_attempts
               (tenant_id, delivery_id, number, attempted_at, duration_ms, outcome, response_code, error_class)
        select r.tenant_id, r.id, r.attempts, p_attempted_at, p_duration_ms,
               case when delivered then 'delivered' else 'failed' end, p_response_code, p_error_class
          from recorded r
      ),
      -- The subscription's health from its row as locked by this update (concurrent attempts each count),
      -- and no write at all for a delivered attempt to a healthy subscription.
      subscription as (
        update integrator.webhook_subscriptions s
           set (consecutive_failed_deliveries, failing_since, disabled_at, disabled_reason, disabled_by) = (
                 select n.failed_in_a_row, n.failing_since,
                        case when s.disabled_at is null and n.reason is not null then now() else s.disabled_at end,
                        case when s.disabled_at is null then n.reason else s.disabled_reason end,
                        case when s.disabled_at is null and n.reason is not null then 'endpoint_health' else s.disabled_by end
                   from (select h.failed_in_a_row, h.failing_since,
                                case when p_failed_in_a_row > 0 and h.failed_in_a_row >= p_failed_in_a_row
                                       then format('%s deliveries in a row failed', h.failed_in_a_row)
                                     when p_failing_days > 0
                                          and h.failing_since <= p_attempted_at - make_interval(secs => p_failing_days * 86400)
                                       then format('Every attempt failed for %s days', p_failing_days)
                                end as reason
                           from (select case when delivered then 0
                                             when delivery_failed then s.consecutive_failed_deliveries + 1
                                             else s.consecutive_failed_deliveries end as failed_in_a_row,
                                        case when delivered then null
                                             else coalesce(s.failing_since, p_attempted_at) end as failing_since) h) n)
          from recorded r
         where s.tenant_id = r.tenant_id and s.id = r.subscription_id and s.is_active
           and not (delivered and s.consecutive_failed_deliveries = 0 and s.failing_since is null)
      )
      select exists (select 1 from recorded) into was_recorded;
      if was_recorded and p_retry_at is not null then
        perform integrator.queue_delivery_jobs(p_tenant_id, array[p_delivery_id], integrator.delivery_backlog(p_tenant_id), p_retry_at, p_attempts_before + 1);
      end if;
      return was_recorded;
    end;
    $$;`;

/** 0016's integrator.queue_delivery_jobs (keyed by delivery), which the down puts back. */
const QUEUE_DELIVERY_JOBS_OF_0016 = `
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
    $$;`;

/** 0018's integrator.record_delivery_attempt (its retry's job keyed), which the down puts back. */
const RECORD_DELIVERY_ATTEMPT_OF_0018 = `
    create or replace function integrator.record_delivery_attempt(
      p_tenant_id uuid, p_delivery_id uuid, p_attempts_before integer, p_status text, p_attempted_at timestamptz,
      p_duration_ms integer, p_response_code integer, p_error_message text, p_error_class text,
      p_retry_at timestamptz, p_failed_in_a_row integer, p_failing_days float8
    ) returns boolean
    language plpgsql volatile as $$
    declare
      delivered constant boolean := p_status = 'delivered';
      delivery_failed constant boolean := p_status = 'failed';
      was_recorded boolean;
    begin
      with recorded as (
        update integrator.webhook_deliveries
           set status = p_status, attempts = attempts + 1, last_attempt_at = p_attempted_at,
               response_code = p_response_code, error_message = p_error_message, updated_at = now()
         where tenant_id = p_tenant_id and id = p_delivery_id and status = 'pending' and attempts = p_attempts_before
        returning tenant_id, id, subscription_id, attempts
      ),
      history as (
        insert into integrator.webhook_delivery_attempts
               (tenant_id, delivery_id, number, attempted_at, duration_ms, outcome, response_code, error_class)
        select r.tenant_id, r.id, r.attempts, p_attempted_at, p_duration_ms,
               case when delivered then 'delivered' else 'failed' end, p_response_code, p_error_class
          from recorded r
      ),
      -- The subscription's health from its row as locked by this update (concurrent attempts each count),
      -- and no write at all for a delivered attempt to a healthy subscription.
      subscription as (
        update integrator.webhook_subscriptions s
           set (consecutive_failed_deliveries, failing_since, disabled_at, disabled_reason, disabled_by) = (
                 select n.failed_in_a_row, n.failing_since,
                        case when s.disabled_at is null and n.reason is not null then now() else s.disabled_at end,
                        case when s.disabled_at is null then n.reason else s.disabled_reason end,
                        case when s.disabled_at is null and n.reason is not null then 'endpoint_health' else s.disabled_by end
                   from (select h.failed_in_a_row, h.failing_since,
                                case when p_failed_in_a_row > 0 and h.failed_in_a_row >= p_failed_in_a_row
                                       then format('%s deliveries in a row failed', h.failed_in_a_row)
                                     when p_failing_days > 0
                                          and h.failing_since <= p_attempted_at - make_interval(secs => p_failing_days * 86400)
                                       then format('Every attempt failed for %s days', p_failing_days)
                                end as reason
                           from (select case when delivered then 0
                                             when delivery_failed then s.consecutive_failed_deliveries + 1
                                             else s.consecutive_failed_deliveries end as failed_in_a_row,
                                        case when delivered then null
                                             else coalesce(s.failing_since, p_attempted_at) end as failing_since) h) n)
          from recorded r
         where s.tenant_id = r.tenant_id and s.id = r.subscription_id and s.is_active
           and not (delivered and s.consecutive_failed_deliveries = 0 and s.failing_since is null)
      )
      select exists (select 1 from recorded) into was_recorded;
      if was_recorded and p_retry_at is not null then
        perform integrator.queue_delivery_jobs(p_tenant_id, array[p_delivery_id], integrator.delivery_backlog(p_tenant_id), p_retry_at);
      end if;
      return was_recorded;
    end;
    $$;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function integrator.queue_delivery_jobs(uuid, uuid[], integer, timestamptz);

    ${QUEUE_DELIVERY_JOBS}

    ${RECORD_DELIVERY_ATTEMPT}
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function integrator.queue_delivery_jobs(uuid, uuid[], integer, timestamptz, integer);
    ${QUEUE_DELIVERY_JOBS_OF_0016}
  `);
  await knex.raw(RECORD_DELIVERY_ATTEMPT_OF_0018);
}
