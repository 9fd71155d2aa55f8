-- integrator.queue_delivery_jobs: the one place a delivery's job is defined and queued, for an event's
-- deliveries (emit_event), a retry (record_delivery_attempt) and a manual send (db/webhooks.ts). Returns
-- the number of deliveries queued.
--
-- - One delivery: a deliver_webhook job. Several: ONE deliver_webhooks job for all of them
--   (worker/tasks/deliver_webhooks.ts), so graphile-worker's own cost per job is paid once per event.
-- - No job key: the payload names the attempt the job is for (`attempts`, the delivery's attempts when
--   queued: 0 for a first send, n after the n-th attempt), and the task sends only while the delivery
--   still has exactly that many, so a job whose attempt another run already recorded does nothing.
-- - Priority is the tenant's backlog rank (delivery_backlog, the k-th delivery at first_rank + k for a
--   job each, capped at 1000): graphile-worker takes jobs by priority, so every tenant's k-th waiting
--   delivery goes before any tenant's (k+1)-th. The flag `tenant:<id>` lets a worker hold a tenant back
--   while it has its share of the worker's slots (worker/fairness.ts).
-- - plan_cache_mode = force_custom_plan holds for graphile_worker.add_job called inside: a generic plan
--   of its statements, made while the job table was small, seq-scans a grown backlog.
-- - plpgsql: graphile-worker's schema is installed after ours (migrateAll), and a plpgsql body's
--   statements are resolved when first run.
-- - The trace context: when the calling statement set integrator.traceparent (and integrator.tracestate)
--   for its transaction (db/trace-context.ts, with tracing on), the payload carries them as `traceparent`
--   and `tracestate`, and the worker's span of the job continues that trace. Unset (or empty, as a setting
--   once set reads in later transactions of the connection) they are left out: json_strip_nulls drops them.
create or replace function integrator.queue_delivery_jobs(
  tenant_id uuid, delivery_ids uuid[], first_rank integer, run_at timestamptz default null, attempts integer default 0
) returns integer
language plpgsql volatile
set plan_cache_mode = force_custom_plan
as $$
declare
  traceparent constant text := nullif(current_setting('integrator.traceparent', true), '');
  tracestate constant text := nullif(current_setting('integrator.tracestate', true), '');
begin
  if coalesce(cardinality(queue_delivery_jobs.delivery_ids), 0) = 0 then
    return 0;
  end if;
  -- One delivery (fan-out 1, a retry, a resend): add_job, whose arguments are plain expressions.
  -- Building an array of job specs is a query planned on every call (custom plans), which made emitting
  -- at fan-out 1 about 8 % slower than add_job (scripts/bench/emit-parts.ts).
  if cardinality(queue_delivery_jobs.delivery_ids) = 1 then
    perform graphile_worker.add_job(
      'deliver_webhook',
      json_strip_nulls(json_build_object('tenant_id', queue_delivery_jobs.tenant_id,
                                         'delivery_id', queue_delivery_jobs.delivery_ids[1],
                                         'attempts', queue_delivery_jobs.attempts,
                                         'traceparent', traceparent, 'tracestate', tracestate)),
      run_at => queue_delivery_jobs.run_at,
      max_attempts => 10,
      priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
      flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
    );
    return 1;
  end if;
  -- Several (an event's): one deliver_webhooks job for all of them.
  perform graphile_worker.add_job(
    'deliver_webhooks',
    json_strip_nulls(json_build_object('tenant_id', queue_delivery_jobs.tenant_id,
                                       'delivery_ids', queue_delivery_jobs.delivery_ids,
                                       'attempts', queue_delivery_jobs.attempts,
                                       'traceparent', traceparent, 'tracestate', tracestate)),
    run_at => queue_delivery_jobs.run_at,
    max_attempts => 10,
    priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
    flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
  );
  return cardinality(queue_delivery_jobs.delivery_ids);
end;
$$;
