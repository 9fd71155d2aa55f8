-- integrator.record_delivery_attempts: several attempts' outcomes in one call (db/webhooks/sending.ts
-- recordAttempts): the worker records together the attempts that end while an earlier record is on its
-- way, rather than one call each. Each element of p_attempts is one integrator.record_delivery_attempt
-- call's arguments by name (without the p_ prefix), with the trace context its retry's job carries
-- (traceparent, tracestate; absent without tracing); the result holds, element by element, whether each
-- applied. All of it or none, like one attempt: an error in one (a deadlock on a subscription's row, say)
-- rolls every one back, and the caller records them one by one.
create or replace function integrator.record_delivery_attempts(p_attempts jsonb) returns boolean[]
language plpgsql volatile
as $$
declare
  a record;
  applied boolean[] := array[]::boolean[];
begin
  for a in
    select * from jsonb_to_recordset(p_attempts) as x(
      tenant_id uuid, delivery_id uuid, attempts_before integer, status text, attempted_at timestamptz,
      duration_ms integer, response_code integer, error_message text, error_class text, retry_at timestamptz,
      failed_in_a_row integer, failing_days float8, failure text, request_headers jsonb, response_headers jsonb,
      response_body text, response_body_truncated boolean, traceparent text, tracestate text)
  loop
    -- Read by queue_delivery_jobs for the retry's job; '' reads as unset.
    perform set_config('integrator.traceparent', coalesce(a.traceparent, ''), true),
            set_config('integrator.tracestate', coalesce(a.tracestate, ''), true);
    applied := applied || integrator.record_delivery_attempt(
      a.tenant_id, a.delivery_id, a.attempts_before, a.status, a.attempted_at, a.duration_ms, a.response_code,
      a.error_message, a.error_class, a.retry_at, a.failed_in_a_row, a.failing_days, a.failure,
      a.request_headers, a.response_headers, a.response_body, a.response_body_truncated);
  end loop;
  return applied;
end;
$$;
