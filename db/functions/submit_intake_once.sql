-- Kept for replicas of the previous release during a rolling upgrade, which still call it; this release
-- calls record_submission_once instead. The next release's migration drops it.
-- integrator.submit_intake_once: an intake call with an Idempotency-Key in ONE statement (db/intake.ts
-- insertSubmissionOnce). It claims the key (claim_idempotency_key) and, only when no response answers,
-- writes through submit_intake and remembers the response (remember_idempotent_response), all in the
-- statement's own transaction. The remembered body is the exact text the first call sends: the caller
-- passes the response's JSON up to its last member (`created_at`, which only the database knows) and this
-- closes it with that timestamp as rfc3339() writes it (UTC, milliseconds, Z; to_char truncates to the
-- millisecond as a Date does). The key belongs to the caller's tenant (p_key_tenant_id), which is not the
-- tenant written for when a platform admin acts on a tenant's behalf.
create or replace function integrator.submit_intake_once(
  p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_lock_text text, p_fingerprint text, p_ttl_hours float8,
  p_body_prefix text,
  p_tenant_id uuid, p_id uuid, p_kind text, p_external_reference text, p_module text, p_tier text,
  p_status text, p_accepted_count integer, p_failed_count integer, p_created_by text, p_request_id text,
  p_items jsonb, p_audit_action text, p_audit_actor text, p_audit_details jsonb
) returns table (outcome text, fingerprint text, status_code integer, response_body text)
language plpgsql volatile
as $$
declare
  created timestamptz;
  body text;
begin
  return query select * from integrator.claim_idempotency_key(p_key_tenant_id, p_subject, p_route, p_key, p_lock_text);
  if found then
    return;
  end if;
  select s.created_at into created
    from integrator.submit_intake(p_tenant_id, p_id, p_kind, p_external_reference, p_module, p_tier, p_status,
                                  p_accepted_count, p_failed_count, p_created_by, p_request_id, p_items,
                                  p_audit_action, p_audit_actor, p_audit_details) s;
  -- The response closed with the one member only the database knows, written as rfc3339() writes it.
  body := p_body_prefix
    || to_json(to_char(created at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text || '}';
  perform integrator.remember_idempotent_response(p_key_tenant_id, p_subject, p_route, p_key, p_fingerprint, 201,
                                                  body, p_ttl_hours);
  return query select 'written', p_fingerprint, 201, body;
end;
$$;
