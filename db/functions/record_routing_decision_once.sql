-- integrator.record_routing_decision_once: a partner switch with an Idempotency-Key in ONE statement
-- (db/partners.ts): claims the key (claim_idempotency_key) and, only when no response answers, records the
-- decision (record_routing_decision) and remembers the response. The response text comes whole from the
-- caller: nothing in a decision is the database's to say.
create or replace function integrator.record_routing_decision_once(
  p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_lock_text text, p_fingerprint text, p_ttl_hours float8,
  p_body text,
  p_tenant_id uuid, p_id uuid, p_kind text, p_partner_key text, p_result text, p_reason text,
  p_correlation_id text, p_return_url text, p_expires_at timestamptz, p_created_by text, p_request_id text,
  p_audit_action text, p_audit_details jsonb
) returns table (outcome text, fingerprint text, status_code integer, response_body text)
language plpgsql volatile
as $$
begin
  return query select * from integrator.claim_idempotency_key(p_key_tenant_id, p_subject, p_route, p_key, p_lock_text);
  if found then
    return;
  end if;
  perform integrator.record_routing_decision(p_tenant_id, p_id, p_kind, p_partner_key, p_result, p_reason,
    p_correlation_id, p_return_url, p_expires_at, p_created_by, p_request_id, p_audit_action, p_audit_details);
  perform integrator.remember_idempotent_response(p_key_tenant_id, p_subject, p_route, p_key, p_fingerprint, 200,
                                                  p_body, p_ttl_hours);
  return query select 'written', p_fingerprint, 200, p_body;
end;
$$;
