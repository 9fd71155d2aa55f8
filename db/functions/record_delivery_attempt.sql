-- integrator.record_delivery_attempt: one delivery attempt's outcome in ONE statement (db/webhooks.ts
-- recordAttempt says what each part means): the delivery's status, attempt count and when its next attempt
-- is due (p_retry_at; null once final); a row of its attempt history, with the failure's sentence, the
-- request's headers and the answer's headers and first 4 KiB of body (p_failure to
-- p_response_body_truncated); its subscription's health (disabling it when p_failed_in_a_row failures in a
-- row or p_failing_days of failing say so; 0 turns a rule off); and, when p_retry_at is set, the next
-- attempt's job (queue_delivery_jobs, for the attempt after this one). It applies only while the delivery
-- is pending with p_attempts_before attempts, so an attempt another run already recorded changes nothing;
-- returns whether it applied. A function so that PostgreSQL plans it once per connection.
create or replace function integrator.record_delivery_attempt(
  p_tenant_id uuid, p_delivery_id uuid, p_attempts_before integer, p_status text, p_attempted_at timestamptz,
  p_duration_ms integer, p_response_code integer, p_error_message text, p_error_class text,
  p_retry_at timestamptz, p_failed_in_a_row integer, p_failing_days float8,
  p_failure text, p_request_headers jsonb, p_response_headers jsonb, p_response_body text,
  p_response_body_truncated boolean
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
           (tenant_id, delivery_id, subscription_id, number, attempted_at, duration_ms, outcome, response_code,
            error_class, error_message, request_headers, response_headers, response_body, response_body_truncated)
    select r.tenant_id, r.id, r.subscription_id, r.attempts, p_attempted_at, p_duration_ms,
           case when delivered then 'delivered' else 'failed' end, p_response_code, p_error_class,
           p_failure, p_request_headers, p_response_headers, p_response_body, coalesce(p_response_body_truncated, false)
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
$$;
