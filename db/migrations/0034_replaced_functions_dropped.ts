// Two functions that no released version calls go, with their files: integrator.submit_intake_once
// (replaced by record_submission_once) and integrator.delivery_to_send (replaced by delivery_to_attempt).
// Both were created and replaced after 0.1.0 and before the next release, so no replica of any release
// calls them during a rolling upgrade. A new database reaches this migration before db/functions/ is
// applied and has no delivery_to_send then (0025 dropped it; only its file made it again): "if exists".
//
// integrator.submit_intake stays: 0.1.0 writes through it, and its replicas run beside this release while
// a deploy rolls. The first migration after the next release drops it.
import type { Knex } from "knex";

/** integrator.submit_intake_once before this migration (the down puts it back). */
const SUBMIT_INTAKE_ONCE_BEFORE = `
    create function integrator.submit_intake_once(
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
      body := p_body_prefix
        || to_json(to_char(created at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text || '}';
      perform integrator.remember_idempotent_response(p_key_tenant_id, p_subject, p_route, p_key, p_fingerprint, 201,
                                                      body, p_ttl_hours);
      return query select 'written', p_fingerprint, 201, body;
    end;
    $$;
`;

/** integrator.delivery_to_send before this migration (the down puts it back). */
const DELIVERY_TO_SEND_BEFORE = `
    create function integrator.delivery_to_send(p_tenant_id uuid, p_delivery_id uuid)
    returns table (
      id uuid, tenant_id uuid, event_id uuid, event_type text, payload jsonb, status text, attempts integer, url text,
      subscription_active boolean, subscription_disabled boolean, subscription_disabled_by text,
      secret_encrypted text, secrets_encrypted text[]
    )
    language plpgsql stable
    as $$
    begin
      return query
      select d.id, d.tenant_id, d.event_id, d.event_type, d.payload, d.status, d.attempts, s.url,
             s.is_active, s.disabled_at is not null, s.disabled_by, s.secret_encrypted,
             array_remove(array[s.secret_encrypted,
                                case when s.previous_secret_expires_at > now() then s.previous_secret_encrypted end],
                          null)
        from integrator.webhook_deliveries d
        join integrator.webhook_subscriptions s on s.tenant_id = d.tenant_id and s.id = d.subscription_id
       where d.tenant_id = p_tenant_id and d.id = p_delivery_id;
    end;
    $$;
`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function if exists integrator.submit_intake_once(uuid, text, text, text, text, text, float8, text, uuid,
                                                          uuid, text, text, text, text, text, integer, integer, text,
                                                          text, jsonb, text, text, jsonb);
    drop function if exists integrator.delivery_to_send(uuid, uuid);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function if exists integrator.submit_intake_once(uuid, text, text, text, text, text, float8, text, uuid,
                                                          uuid, text, text, text, text, text, integer, integer, text,
                                                          text, jsonb, text, text, jsonb);
    drop function if exists integrator.delivery_to_send(uuid, uuid);
    ${SUBMIT_INTAKE_ONCE_BEFORE}
    ${DELIVERY_TO_SEND_BEFORE}
  `);
}
