-- integrator.claim_idempotency_key: an Idempotency-Key's rules, in the calling transaction, for every keyed
-- write (record_submission_once, record_routing_decision_once; http/idempotency.ts turns the outcome
-- into a reply). It takes the key's advisory lock; when another call holds it, a finished call's
-- response still answers ('remembered'), else 'in_progress'. With the lock, an unexpired remembered
-- response answers ('remembered'); otherwise it returns no row and the caller writes (an expired
-- response is forgotten first) and then calls remember_idempotent_response.
create or replace function integrator.claim_idempotency_key(
  p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_lock_text text
) returns table (outcome text, fingerprint text, status_code integer, response_body text)
language plpgsql volatile
as $$
declare
  found_key record;
begin
  if not pg_try_advisory_xact_lock(hashtextextended(p_lock_text, 0)) then
    -- Another call holds the key: a replay of a finished call still answers with its response.
    select k.fingerprint, k.status_code, k.response_body into found_key
      from integrator.idempotency_keys k
     where k.tenant_id = p_key_tenant_id and k.subject = p_subject and k.route = p_route
       and k.idempotency_key = p_key and k.expires_at > now();
    if found then
      return query select 'remembered', found_key.fingerprint, found_key.status_code, found_key.response_body;
    else
      return query select 'in_progress', null::text, null::integer, null::text;
    end if;
    return;
  end if;
  select k.fingerprint, k.status_code, k.response_body, k.expires_at <= now() as expired into found_key
    from integrator.idempotency_keys k
   where k.tenant_id = p_key_tenant_id and k.subject = p_subject and k.route = p_route and k.idempotency_key = p_key;
  if found and not found_key.expired then
    return query select 'remembered', found_key.fingerprint, found_key.status_code, found_key.response_body;
  elsif found then
    delete from integrator.idempotency_keys k
     where k.tenant_id = p_key_tenant_id and k.subject = p_subject and k.route = p_route and k.idempotency_key = p_key;
  end if;
end;
$$;
