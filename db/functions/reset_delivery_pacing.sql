-- integrator.reset_delivery_pacing: a subscription's rate limit changed (updateWebhookSubscription, in the
-- change's transaction), so the turns handed out under the old one no longer hold. The pacing row's
-- generation is bumped and its next slot forgotten (the time of the last attempt stays: the new limit
-- spaces the next attempt from it), and the subscription's deliveries waiting for their turn are due now
-- (their next_attempt_at too; a delivery waiting for a retry's time is not one of them): their paced jobs
-- (pace_delivery.sql) are moved to now with graphile-worker's reschedule_jobs (a job running is left
-- alone), and each, holding a slot of an older generation, takes a turn under the new limit, or is sent
-- at once when the limit was removed. Returns the number of jobs moved.
create or replace function integrator.reset_delivery_pacing(p_tenant_id uuid, p_subscription_id uuid)
returns integer
language plpgsql volatile
as $$
declare
  moved integer;
begin
  update integrator.webhook_send_pacing
     set generation = generation + 1, next_free_at = null
   where tenant_id = p_tenant_id and subscription_id = p_subscription_id;
  with paced as (
    select d.id as delivery_id, j.id as job_id
      from integrator.webhook_deliveries d
      join graphile_worker._private_jobs j on j.key = 'deliver_webhook:paced:' || d.id::text
     where d.tenant_id = p_tenant_id and d.subscription_id = p_subscription_id and d.status = 'pending'
       and j.locked_at is null
  ),
  rescheduled as (
    select r.id from graphile_worker.reschedule_jobs(array(select job_id from paced), run_at => now()) r
  ),
  shown as (
    update integrator.webhook_deliveries d
       set next_attempt_at = now(), updated_at = now()
      from paced p
     where d.tenant_id = p_tenant_id and d.id = p.delivery_id and d.status = 'pending'
  )
  select count(*)::integer into moved from rescheduled;
  return moved;
end;
$$;
