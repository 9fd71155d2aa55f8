-- integrator.record_delivery_attempt: one delivery attempt's outcome in ONE call (db/webhooks/sending.ts
-- recordAttempt says what each part means), all of it or none:
-- - the delivery's status, attempt count and when its next attempt is due (p_retry_at; null once final);
-- - a row of its attempt history naming its subscription (what the endpoint's health is read from,
--   db/webhooks/health.ts), with the failure's sentence, the request's headers and the answer's headers and
--   first 4 KiB of body (p_failure to p_response_body_truncated);
-- - its subscription's failure history, disabling it when p_failed_in_a_row failed deliveries in a row or
--   p_failing_days of failing say so (0 turns a rule off), under the subscription's row lock, so that of
--   concurrent attempts exactly one disables it; health never enables a subscription, and one already
--   disabled (by hand or by a rule) keeps its time, reason and disabled_by;
-- - the operational events, in this same transaction, so that each exists exactly when its change does,
--   once: webhook.endpoint_disabled when this attempt disabled the subscription, and
--   webhook.delivery_exhausted when it was the delivery's last and failed (not for a test delivery, nor
--   for a listen session's),
--   each delivered to the tenant's other subscriptions naming the kind (emit_operational_event.sql);
-- - when p_retry_at is set, the next attempt's job (queue_delivery_jobs, for the attempt after this one).
-- The delivery of an operational event counts in its endpoint's health figure but in no rule that disables
-- it, and its last failed attempt emits nothing: one operational event never leads to another.
-- It applies only while the delivery is pending with p_attempts_before attempts, so an attempt another run
-- already recorded changes nothing; returns whether it applied. A function so that PostgreSQL plans its
-- statements once per connection.
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
  recorded record;
  operational boolean;
  history record;
  new_failed_in_a_row integer;
  new_failing_since timestamptz;
  reason text;
  report jsonb;
begin
  update integrator.webhook_deliveries
     set status = p_status, attempts = attempts + 1, last_attempt_at = p_attempted_at,
         next_attempt_at = p_retry_at, response_code = p_response_code, error_message = p_error_message,
         updated_at = now()
   where tenant_id = p_tenant_id and id = p_delivery_id and status = 'pending' and attempts = p_attempts_before
  returning subscription_id, event_id, event_type, attempts,
            coalesce(payload -> 'test' = 'true'::jsonb, false) as test
       into recorded;
  if not found then
    return false;
  end if;

  insert into integrator.webhook_delivery_attempts
         (tenant_id, delivery_id, subscription_id, number, attempted_at, duration_ms, outcome, response_code,
          error_class, error_message, request_headers, response_headers, response_body, response_body_truncated)
  values (p_tenant_id, p_delivery_id, recorded.subscription_id, recorded.attempts, p_attempted_at, p_duration_ms,
          case when delivered then 'delivered' else 'failed' end, p_response_code, p_error_class,
          p_failure, p_request_headers, p_response_headers, p_response_body, coalesce(p_response_body_truncated, false));

  operational := recorded.event_type in ('webhook.endpoint_disabled', 'webhook.delivery_exhausted');
  if not operational then
    if delivered then
      -- No write at all for a delivered attempt to a healthy subscription.
      update integrator.webhook_subscriptions
         set consecutive_failed_deliveries = 0, failing_since = null
       where tenant_id = p_tenant_id and id = recorded.subscription_id and is_active
         and not (consecutive_failed_deliveries = 0 and failing_since is null);
    else
      -- The row as concurrent attempts left it (each waits for the one before): each counts, and only the
      -- one that finds it enabled and crosses a rule disables it. NO KEY UPDATE, as an update takes: the
      -- deliveries emit_operational_event inserts only share-lock the key of the subscriptions they go to.
      select s.consecutive_failed_deliveries, s.failing_since, s.disabled_at
        into history
        from integrator.webhook_subscriptions s
       where s.tenant_id = p_tenant_id and s.id = recorded.subscription_id and s.is_active
         for no key update;
      if found then
        new_failed_in_a_row := history.consecutive_failed_deliveries + case when delivery_failed then 1 else 0 end;
        new_failing_since := coalesce(history.failing_since, p_attempted_at);
        reason := case
          when p_failed_in_a_row > 0 and new_failed_in_a_row >= p_failed_in_a_row
            then format('%s deliveries in a row failed', new_failed_in_a_row)
          when p_failing_days > 0 and new_failing_since <= p_attempted_at - make_interval(secs => p_failing_days * 86400)
            then format('Every attempt failed for %s days', p_failing_days)
        end;
        if history.disabled_at is null and reason is not null then
          update integrator.webhook_subscriptions
             set consecutive_failed_deliveries = new_failed_in_a_row, failing_since = new_failing_since,
                 disabled_at = now(), disabled_reason = reason, disabled_by = 'endpoint_health'
           where tenant_id = p_tenant_id and id = recorded.subscription_id;
          perform integrator.emit_operational_event(
            p_tenant_id, 'webhook.endpoint_disabled',
            jsonb_build_object('subscription_id', recorded.subscription_id, 'reason', reason),
            recorded.subscription_id);
        else
          update integrator.webhook_subscriptions
             set consecutive_failed_deliveries = new_failed_in_a_row, failing_since = new_failing_since
           where tenant_id = p_tenant_id and id = recorded.subscription_id;
        end if;
      end if;
    end if;
    -- A listen session's delivery is reported to no endpoint: the session is a developer's local
    -- receiver, not an endpoint whose failures the tenant's monitoring should hear of (and its id is no
    -- subscription the API shows).
    if delivery_failed and not recorded.test
       and not exists (select 1 from integrator.webhook_subscriptions s
                        where s.tenant_id = p_tenant_id and s.id = recorded.subscription_id
                          and s.transport = 'listen') then
      report := jsonb_build_object('delivery_id', p_delivery_id, 'subscription_id', recorded.subscription_id,
                                   'event_id', 'evt_' || recorded.event_id, 'event_type', recorded.event_type,
                                   'attempts', recorded.attempts, 'last_response_code', p_response_code);
      -- Only a kind the document still declares can be reported (webhook.test never is); the attempt is
      -- recorded whatever the report, so that no delivery is sent again for want of its record.
      if integrator.webhook_event_data_problem('webhook.delivery_exhausted', report) is null then
        perform integrator.emit_operational_event(p_tenant_id, 'webhook.delivery_exhausted', report,
                                                  recorded.subscription_id);
      end if;
    end if;
  end if;

  if p_retry_at is not null then
    perform integrator.queue_delivery_jobs(p_tenant_id, array[p_delivery_id], integrator.delivery_backlog(p_tenant_id),
                                           p_retry_at, p_attempts_before + 1);
  end if;
  return true;
end;
$$;
