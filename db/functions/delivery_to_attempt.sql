-- integrator.delivery_to_attempt: one delivery joined to its subscription, what the deliver_webhook task
-- needs to send it (db/webhooks/sending.ts findDeliveryToSend): the row integrator.deliveries_to_attempt
-- returns for the one pair, none when there is no such delivery. This release's worker reads through
-- deliveries_to_attempt; the 0.2.0 worker reads one delivery at a time through this function, and its
-- replicas run beside this release while a deploy rolls.
create or replace function integrator.delivery_to_attempt(p_tenant_id uuid, p_delivery_id uuid)
returns table (
  id uuid, tenant_id uuid, subscription_id uuid, event_id uuid, event_type text, payload jsonb, status text, attempts integer, url text,
  subscription_active boolean, subscription_disabled boolean, subscription_disabled_by text,
  secret_encrypted text, secrets_encrypted text[], rate_limit_per_second integer
)
language plpgsql stable
as $$
begin
  return query select * from integrator.deliveries_to_attempt(array[p_tenant_id], array[p_delivery_id]);
end;
$$;
