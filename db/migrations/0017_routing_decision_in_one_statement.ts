// Issue 13 (performance): a launch or switch decision is recorded in ONE statement, and a switch with
// an Idempotency-Key takes its key, writes and remembers its response in one statement too, as intake
// does since 0014. Before, a decision was a transaction of four round trips (BEGIN, the decision, its
// audit action, COMMIT) and a keyed switch eight (look-up, BEGIN, lock, look-up, two inserts, the
// remembered response, COMMIT).
//
// - integrator.claim_idempotency_key: the key's rules in the calling transaction, shared by every keyed
//   write: its advisory lock (when another call holds it, a finished call's response still answers,
//   else 'in_progress'), its unexpired remembered response ('remembered'), or no row: the caller writes
//   (an expired response is forgotten first). integrator.remember_idempotent_response stores the
//   response text exactly as sent. submit_intake_once (0014) is redefined on the two, unchanged in
//   what it does.
// - integrator.record_routing_decision: the decision row and its audit action.
// - integrator.record_routing_decision_once: both under a key; the response text comes whole from
//   the caller (nothing in a decision is the database's to say).
import type { Knex } from "knex";

/** 0014's integrator.submit_intake_once (its own look-up and insert of the key), which the down puts back. */
const SUBMIT_INTAKE_ONCE_OF_0014 = `
    create function integrator.submit_intake_once(
      p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_lock_text text, p_fingerprint text, p_ttl_hours float8,
      p_body_prefix text,
      p_tenant_id uuid, p_id uuid, p_kind text, p_external_reference text, p_module text, p_tier text,
      p_status text, p_accepted_count integer, p_failed_count integer, p_created_by text, p_request_id text,
      p_items jsonb, p_audit_action text, p_audit_actor text, p_audit_details jsonb
    ) returns table (outcome text, fingerprint text, status_code integer, response_body text)
    language plpgsql volatile as $$
    declare
      found_key record;
      created timestamptz;
      body text;
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
        return;
      end if;
      if found then
        delete from integrator.idempotency_keys k
         where k.tenant_id = p_key_tenant_id and k.subject = p_subject and k.route = p_route and k.idempotency_key = p_key;
      end if;

      select s.created_at into created
        from integrator.submit_intake(p_tenant_id, p_id, p_kind, p_external_reference, p_module, p_tier, p_status,
                                      p_accepted_count, p_failed_count, p_created_by, p_request_id, p_items,
                                      p_audit_action, p_audit_actor, p_audit_details) s;
      body := p_body_prefix
        || to_json(to_char(created at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text || '}';

      insert into integrator.idempotency_keys
        (tenant_id, subject, route, idempotency_key, fingerprint, status_code, response_body, expires_at)
      values (p_key_tenant_id, p_subject, p_route, p_key, p_fingerprint, 201, body,
              now() + p_ttl_hours * interval '1 hour');

      return query select 'written', p_fingerprint, 201, body;
    end;
    $$;
  `;

const RECORD_PARAMETERS = `p_tenant_id uuid, p_id uuid, p_kind text, p_partner_key text, p_result text, p_reason text,
      p_correlation_id text, p_return_url text, p_expires_at timestamptz, p_created_by text, p_request_id text,
      p_audit_action text, p_audit_details jsonb`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function integrator.claim_idempotency_key(
      p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_lock_text text
    ) returns table (outcome text, fingerprint text, status_code integer, response_body text)
    language plpgsql volatile as $$
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

    create function integrator.remember_idempotent_response(
      p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_fingerprint text, p_status integer,
      p_body text, p_ttl_hours float8
    ) returns void
    language sql volatile as $$
      insert into integrator.idempotency_keys
        (tenant_id, subject, route, idempotency_key, fingerprint, status_code, response_body, expires_at)
      values (p_key_tenant_id, p_subject, p_route, p_key, p_fingerprint, p_status, p_body,
              now() + p_ttl_hours * interval '1 hour');
    $$;

    create or replace function integrator.submit_intake_once(
      p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_lock_text text, p_fingerprint text, p_ttl_hours float8,
      p_body_prefix text,
      p_tenant_id uuid, p_id uuid, p_kind text, p_external_reference text, p_module text, p_tier text,
      p_status text, p_accepted_count integer, p_failed_count integer, p_created_by text, p_request_id text,
      p_items jsonb, p_audit_action text, p_audit_actor text, p_audit_details jsonb
    ) returns table (outcome text, fingerprint text, status_code integer, response_body text)
    language plpgsql volatile as $$
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

    create function integrator.record_routing_decision(${RECORD_PARAMETERS}) returns void
    language sql volatile as $$
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

    create function integrator.record_routing_decision_once(
      p_key_tenant_id uuid, p_subject text, p_route text, p_key text, p_lock_text text, p_fingerprint text, p_ttl_hours float8,
      p_body text,
      ${RECORD_PARAMETERS}
    ) returns table (outcome text, fingerprint text, status_code integer, response_body text)
    language plpgsql volatile as $$
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
  `);
}

export async function down(knex: Knex): Promise<void> {
  const recordTypes = "uuid, uuid, text, text, text, text, text, text, timestamptz, text, text, text, jsonb";
  await knex.raw(`
    drop function if exists integrator.record_routing_decision_once(uuid, text, text, text, text, text, float8, text, ${recordTypes});
    drop function if exists integrator.record_routing_decision(${recordTypes});
    drop function if exists integrator.submit_intake_once(uuid, text, text, text, text, text, float8, text, uuid, uuid, text,
      text, text, text, text, integer, integer, text, text, jsonb, text, text, jsonb);
  `);
  await knex.raw(SUBMIT_INTAKE_ONCE_OF_0014);
  await knex.raw(`
    drop function if exists integrator.remember_idempotent_response(uuid, text, text, text, text, integer, text, float8);
    drop function if exists integrator.claim_idempotency_key(uuid, text, text, text, text);
  `);
}
