// Issue 26: attempt details. Each attempt keeps what a person needs to see why it failed: the sentence
// beside its class (error_message), the headers of the request sent (signatures included, never the
// secret), and the answer's headers and the first 4 KiB of its body with whether there was more. All of
// it is bounded (the body at 4096 characters here, 4096 bytes by the sender; headers by Node's 16 KiB
// header limit) and goes with its delivery (the attempts' foreign key cascades, so the purge takes them).
//
// record_delivery_attempt takes the new values (a new argument list: the old one is dropped here and its
// file creates the new one). Failed attempts recorded before get the sentence of their class.
import type { Knex } from "knex";

/** integrator.record_delivery_attempt before this migration, as 0026_delivery_next_attempt left it (the down puts it back). */
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
               next_attempt_at = p_retry_at, response_code = p_response_code, error_message = p_error_message,
               updated_at = now()
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
        perform integrator.queue_delivery_jobs(p_tenant_id, array[p_delivery_id], integrator.delivery_backlog(p_tenant_id),
                                               p_retry_at, p_attempts_before + 1);
      end if;
      return was_recorded;
    end;
    $$;`;

const DROP_NEW = `drop function if exists integrator.record_delivery_attempt(uuid, uuid, integer, text, timestamptz, integer,
  integer, text, text, timestamptz, integer, float8, text, jsonb, jsonb, text, boolean);`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.webhook_delivery_attempts
      add column error_message text check (char_length(error_message) <= 500),
      add column request_headers jsonb,
      add column response_headers jsonb,
      add column response_body text check (char_length(response_body) <= 4096),
      add column response_body_truncated boolean not null default false;
    update integrator.webhook_delivery_attempts
       set error_message = case error_class
             when 'timeout' then 'The endpoint sent no answer within the attempt''s time limit.'
             when 'tls_failed' then 'The TLS handshake with the endpoint failed, or its certificate was not valid for its host name or not trusted.'
             when 'http_status' then format('The endpoint answered %s; only a 2xx answer counts as delivered.', response_code)
             else 'The request to the endpoint failed before an answer arrived (its name, its address or the connection).'
           end
     where outcome = 'failed';
    drop function integrator.record_delivery_attempt(uuid, uuid, integer, text, timestamptz, integer, integer, text,
      text, timestamptz, integer, float8);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ${DROP_NEW}
    ${RECORD_DELIVERY_ATTEMPT_BEFORE}
    alter table integrator.webhook_delivery_attempts
      drop column if exists error_message,
      drop column if exists request_headers,
      drop column if exists response_headers,
      drop column if exists response_body,
      drop column if exists response_body_truncated;
  `);
}
