// Issue 26: retries people can plan around. Each delivery keeps when its next attempt is due
// (next_attempt_at): when it is queued, then the time of each retry as the attempt before it queues it
// (db/functions/record_delivery_attempt.sql); the API shows it while the delivery is pending and null once
// it is final. Deliveries already pending get it from their queued job's run_at (a retry), else from
// their creation (a first attempt) or their last attempt.
import type { Knex } from "knex";

const UUID = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/** integrator.record_delivery_attempt before this migration (the down puts it back). */
const RECORD_DELIVERY_ATTEMPT_BEFORE = `
    create or replace function integrator.record_delivery_attempt(
      p_tenant_id uuid, p_delivery_id uuid, p_attempts_before integer, p_status text, p_attempted_at timestamptz,
      p_duration_ms integer, p_response_code integer, p_error_message text, p_error_class text,
      p_retry_at timestamptz, p_failed_in_a_row integer, p_failing_days float8
    ) returns boolean
    language plpgsql volatile
    as $$
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
        perform integrator.queue_delivery_jobs(p_tenant_id, array[p_delivery_id], integrator.delivery_backlog(p_tenant_id),
                                               p_retry_at, p_attempts_before + 1);
      end if;
      return was_recorded;
    end;
    $$;`;

export async function up(knex: Knex): Promise<void> {
  // Added without a default first, so final deliveries keep null and no row is rewritten; new deliveries
  // are due when they are queued.
  await knex.raw(`
    alter table integrator.webhook_deliveries add column next_attempt_at timestamptz;
    alter table integrator.webhook_deliveries alter column next_attempt_at set default now();
    do $$
    begin
      -- On a new database graphile-worker's schema comes after these migrations (app/lifecycle.ts), with no jobs.
      if to_regclass('graphile_worker._private_jobs') is not null then
        update integrator.webhook_deliveries d
           set next_attempt_at = j.run_at
          from (select (jj.payload->>'tenant_id')::uuid as tenant_id, (jj.payload->>'delivery_id')::uuid as delivery_id,
                       min(jj.run_at) as run_at
                  from graphile_worker._private_jobs jj
                  join graphile_worker._private_tasks k on k.id = jj.task_id
                 where k.identifier = 'deliver_webhook'
                   and jj.payload->>'tenant_id' ~* '${UUID}' and jj.payload->>'delivery_id' ~* '${UUID}'
                 group by 1, 2) j
         where d.tenant_id = j.tenant_id and d.id = j.delivery_id and d.status = 'pending';
      end if;
    end;
    $$;
    update integrator.webhook_deliveries
       set next_attempt_at = case when attempts = 0 then created_at else coalesce(last_attempt_at, created_at) end
     where status = 'pending' and next_attempt_at is null;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ${RECORD_DELIVERY_ATTEMPT_BEFORE}
    alter table integrator.webhook_deliveries drop column if exists next_attempt_at;
  `);
}
