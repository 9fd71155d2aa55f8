-- integrator.deliveries_to_attempt: several deliveries joined to their subscriptions in one call, what the
-- deliver_webhook task needs to send each (db/webhooks/sending.ts findDeliveriesToSend): the worker reads
-- an event's deliveries together, and the deliveries of jobs that start together, rather than one call
-- each. Each row is what integrator.delivery_to_attempt returns for one delivery: its state,
-- subscription, event and payload, the target, whether the subscription is active or disabled (and by
-- whom), every secret that signs now, sealed, newest first, and the subscription's rate limit.
-- p_tenant_ids and p_delivery_ids are pairs, element by element; a pair with no delivery has no row.
create or replace function integrator.deliveries_to_attempt(p_tenant_ids uuid[], p_delivery_ids uuid[])
returns table (
  id uuid, tenant_id uuid, subscription_id uuid, event_id uuid, event_type text, payload jsonb, status text, attempts integer, url text,
  subscription_active boolean, subscription_disabled boolean, subscription_disabled_by text,
  secret_encrypted text, secrets_encrypted text[], rate_limit_per_second integer
)
language plpgsql stable
as $$
begin
  -- One primary-key look-up per pair, the plan kept for the connection: a join of the arrays with the
  -- tables is planned on a guess of their length, and a guess of a few rows once joined every
  -- subscription to the array and scanned the deliveries by subscription.
  for i in 1 .. coalesce(cardinality(p_delivery_ids), 0) loop
    return query
    select d.id, d.tenant_id, d.subscription_id, d.event_id, d.event_type, d.payload, d.status, d.attempts, s.url,
           s.is_active, s.disabled_at is not null, s.disabled_by, s.secret_encrypted,
           array_remove(array[s.secret_encrypted,
                              case when s.previous_secret_expires_at > now() then s.previous_secret_encrypted end],
                        null),
           s.rate_limit_per_second
      from integrator.webhook_deliveries d
      join integrator.webhook_subscriptions s on s.tenant_id = d.tenant_id and s.id = d.subscription_id
     where d.tenant_id = p_tenant_ids[i] and d.id = p_delivery_ids[i];
  end loop;
end;
$$;
