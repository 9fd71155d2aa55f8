-- integrator.pace_delivery: a subscription's rate limit (rate_limit_per_second), kept in PostgreSQL so that
-- it holds across every worker. The deliver_webhook task calls it, for a subscription with a limit only,
-- right before an attempt (a first send, a retry, a redelivery or a test event alike). It returns null when
-- the attempt may start now; otherwise it has moved the delivery's job to the delivery's slot and returns
-- the seconds until then, and the task returns at once: no worker slot waits for the limit, and other
-- endpoints' and tenants' jobs run meanwhile.
--
-- integrator.webhook_send_pacing holds, per subscription:
-- - last_sent_at: when its last attempt was let go. The next is let go no sooner than 1/rate after it, so
--   no more than `rate` attempts to the endpoint start in any second, however late or early their jobs run
--   and whichever worker runs them.
-- - next_free_at: the next slot to hand out. A delivery that must wait is given the next slot in turn
--   (its job runs then, naming the generation of its slot), so a burst of n deliveries is spread over
--   n/rate seconds, each job woken about once, rather than every waiting job waking at each free moment.
-- - generation: bumped when the subscription's limit changes (reset_delivery_pacing.sql, which also hands
--   out slots afresh). A paced job holds its slot only while its payload's pacing_generation is the
--   row's; one from before the change takes a slot in turn like any other.
-- A paced job that finds itself too soon after the last attempt anyway (the attempt before it was let go
-- later than its slot) moves to that earliest moment without taking a new slot.
--
-- The moved job is the delivery's deliver_webhook job as queue_delivery_jobs.sql defines it (same payload,
-- priority rule, flag and max_attempts), plus `pacing_generation` and the job key
-- `deliver_webhook:paced:<delivery>`, so a delivery has one paced job at most (replace mode: a second
-- would take the first's place). The
-- delivery's next_attempt_at says when it is due. Nothing is counted as an attempt: the attempt count, the
-- status and the subscription's health are untouched.
create or replace function integrator.pace_delivery(
  p_tenant_id uuid, p_subscription_id uuid, p_delivery_id uuid, p_attempts integer, p_rate integer,
  p_generation integer
) returns float8
language plpgsql volatile
as $$
declare
  gap constant interval := make_interval(secs => 1.0 / p_rate);
  pacing record;
  holds_slot boolean;
  t timestamptz;
  earliest timestamptz;
  slot timestamptz;
begin
  insert into integrator.webhook_send_pacing (tenant_id, subscription_id)
  values (p_tenant_id, p_subscription_id)
  on conflict (tenant_id, subscription_id) do nothing;
  select p.next_free_at, p.last_sent_at, p.generation into pacing
    from integrator.webhook_send_pacing p
   where p.tenant_id = p_tenant_id and p.subscription_id = p_subscription_id
     for update;
  -- The time once the row is ours: another worker's call may have held it.
  t := clock_timestamp();
  holds_slot := p_generation is not distinct from pacing.generation;
  earliest := coalesce(pacing.last_sent_at + gap, t);
  if holds_slot then
    slot := earliest;
  else
    slot := greatest(t, coalesce(pacing.next_free_at, t), earliest);
  end if;
  if slot <= t then
    update integrator.webhook_send_pacing
       set last_sent_at = t,
           next_free_at = case when holds_slot then next_free_at else t + gap end
     where tenant_id = p_tenant_id and subscription_id = p_subscription_id;
    return null;
  end if;
  if not holds_slot then
    update integrator.webhook_send_pacing set next_free_at = slot + gap
     where tenant_id = p_tenant_id and subscription_id = p_subscription_id;
  end if;
  update integrator.webhook_deliveries set next_attempt_at = slot, updated_at = now()
   where tenant_id = p_tenant_id and id = p_delivery_id and status = 'pending' and attempts = p_attempts;
  perform graphile_worker.add_job(
    'deliver_webhook',
    json_build_object('tenant_id', p_tenant_id, 'delivery_id', p_delivery_id, 'attempts', p_attempts,
                      'pacing_generation', pacing.generation),
    run_at => slot,
    max_attempts => 10,
    job_key => 'deliver_webhook:paced:' || p_delivery_id::text,
    job_key_mode => 'replace',
    priority => least(greatest(integrator.delivery_backlog(p_tenant_id), 0), 1000),
    flags => array['tenant:' || p_tenant_id::text]
  );
  return extract(epoch from slot - clock_timestamp());
end;
$$;
