-- integrator.delivery_to_attempt: a delivery joined to its subscription, what the deliver_webhook task needs
-- to send it (db/webhooks.ts findDeliveryToSend): its state, subscription, event and payload, the target,
-- whether the subscription is active or disabled (and by whom), every secret that signs now, sealed,
-- newest first (the current one, and the previous one during a rotation's overlap window), and the
-- subscription's rate limit (null: none; otherwise the task paces the attempt through
-- integrator.pace_delivery). A function so that PostgreSQL plans it once per connection, not on every
-- attempt.
create or replace function integrator.delivery_to_attempt(p_tenant_id uuid, p_delivery_id uuid)
returns table (
  id uuid, tenant_id uuid, subscription_id uuid, event_id uuid, event_type text, payload jsonb, status text, attempts integer, url text,
  subscription_active boolean, subscription_disabled boolean, subscription_disabled_by text,
  secret_encrypted text, secrets_encrypted text[], rate_limit_per_second integer
)
language plpgsql stable
as $$
begin
  return query
  select d.id, d.tenant_id, d.subscription_id, d.event_id, d.event_type, d.payload, d.status, d.attempts, s.url,
         s.is_active, s.disabled_at is not null, s.disabled_by, s.secret_encrypted,
         array_remove(array[s.secret_encrypted,
                            case when s.previous_secret_expires_at > now() then s.previous_secret_encrypted end],
                      null),
         s.rate_limit_per_second
    from integrator.webhook_deliveries d
    join integrator.webhook_subscriptions s on s.tenant_id = d.tenant_id and s.id = d.subscription_id
   where d.tenant_id = p_tenant_id and d.id = p_delivery_id;
end;
$$;
