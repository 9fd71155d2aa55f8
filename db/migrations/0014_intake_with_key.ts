// An intake call with an Idempotency-Key in ONE statement (issue 13): integrator.submit_intake_once
// takes the key's advisory lock, looks for the remembered response, and only when there is none (or
// it expired) writes through integrator.submit_intake and remembers the response it returns, all in
// the statement's own transaction. Before this a fresh key cost seven round trips (look-up, BEGIN,
// lock, look-up, write, remember, COMMIT).
//
// The remembered body is the exact text the first call sends: the caller passes the response's JSON
// up to its last member (`created_at`, which only the database knows) and the function closes it with
// that timestamp written as rfc3339() writes it (UTC, milliseconds, Z; to_char truncates to the
// millisecond like a Date does). A key belongs to the caller's tenant (p_key_tenant_id), which is not
// the tenant written for when a platform admin acts on a tenant's behalf.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
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
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function if exists integrator.submit_intake_once(uuid, text, text, text, text, text, float8, text, uuid, uuid, text,
      text, text, text, text, integer, integer, text, text, jsonb, text, text, jsonb);
  `);
}
