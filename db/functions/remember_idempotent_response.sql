-- integrator.remember_idempotent_response: stores a keyed write's response under its Idempotency-Key, the
-- body exactly as sent (text, not jsonb, so a replay is byte-identical), for p_ttl_hours.
create or replace function integrator.remember_idempotent_response(
  p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_fingerprint text, p_status integer,
  p_body text, p_ttl_hours float8
) returns void
language sql volatile
as $$
  insert into integrator.idempotency_keys
    (tenant_id, subject, route, idempotency_key, fingerprint, status_code, response_body, expires_at)
  values (p_key_tenant_id, p_subject, p_route, p_key, p_fingerprint, p_status, p_body,
          now() + p_ttl_hours * interval '1 hour');
$$;
