-- integrator.record_routing_decision: a partner launch or switch decision (routed or denied) and its audit
-- action, in ONE statement (db/partners.ts; record_routing_decision_once under an Idempotency-Key).
create or replace function integrator.record_routing_decision(
  p_tenant_id uuid, p_id uuid, p_kind text, p_partner_key text, p_result text, p_reason text,
  p_correlation_id text, p_return_url text, p_expires_at timestamptz, p_created_by text, p_request_id text,
  p_audit_action text, p_audit_details jsonb
) returns void
language sql volatile
as $$
  with decision as (
    insert into integrator.routing_decisions
      (tenant_id, id, kind, partner_key, result, reason, correlation_id, return_url, expires_at, created_by, request_id)
    values (p_tenant_id, p_id, p_kind, p_partner_key, p_result, p_reason, p_correlation_id, p_return_url,
            p_expires_at, p_created_by, p_request_id)
    returning tenant_id, id
  )
  insert into integrator.audit_actions (tenant_id, action, actor, resource_type, resource_id, request_id, details)
  select d.tenant_id, p_audit_action, p_created_by, 'routing_decision', d.id::text, p_request_id, p_audit_details
    from decision d;
$$;
