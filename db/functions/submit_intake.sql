-- Not the service's write path: that is integrator.record_submission (db/intake.ts). This function is
-- kept, unchanged, because release 0.1.0 writes through it, and 0.1.0's replicas run beside this code
-- while a rolling upgrade from 0.1.0 lasts. The first migration after the next release drops it with this
-- file (docs/architecture.md, "Where SQL lives").
-- integrator.submit_intake: 0.1.0's intake write in one statement. It writes the submission,
-- its items and its audit action, and fans the intake event out through emit_event only when one of the
-- tenant's active subscriptions takes the kind: without one the event would make no delivery, and its
-- data, built here from the row just written, needs no check. A plpgsql function keeps its statements'
-- plans for the connection, and one call is one round trip, atomic even in autocommit.
create or replace function integrator.submit_intake(
  p_tenant_id uuid, p_id uuid, p_kind text, p_external_reference text, p_module text, p_tier text,
  p_status text, p_accepted_count integer, p_failed_count integer, p_created_by text, p_request_id text,
  p_items jsonb, p_audit_action text, p_audit_actor text, p_audit_details jsonb
) returns table (
  id uuid, tenant_id uuid, external_reference text, module text, tier text, item_count integer,
  accepted_count integer, failed_count integer, status text, created_by text, created_at timestamptz
)
language plpgsql volatile
as $$
declare
  item_count integer := jsonb_array_length(p_items);
  created timestamptz;
begin
  insert into integrator.intake_submissions as s
    (tenant_id, id, kind, external_reference, module, tier, item_count, accepted_count, failed_count, status, created_by, request_id)
  values (p_tenant_id, p_id, p_kind, p_external_reference, p_module, p_tier, item_count, p_accepted_count,
          p_failed_count, p_status, p_created_by, p_request_id)
  returning s.created_at into created;

  insert into integrator.intake_items
    (tenant_id, id, submission_id, position, filename, file_size, mime_type, item_metadata, status, error_message)
  select p_tenant_id, i.id, p_id, i.position, i.filename, i.file_size, i.mime_type, i.item_metadata, i.status, i.error_message
    from jsonb_to_recordset(p_items) as i(id uuid, position integer, filename text, file_size bigint, mime_type text,
                                          item_metadata jsonb, status text, error_message text);

  insert into integrator.audit_actions (tenant_id, action, actor, resource_type, resource_id, request_id, details)
  values (p_tenant_id, p_audit_action, p_audit_actor, 'intake_submission', p_id::text, p_request_id, p_audit_details);

  if exists (
    select 1 from integrator.webhook_subscriptions w
     where w.tenant_id = p_tenant_id and w.is_active
       and (p_audit_action = any (w.events) or '*' = any (w.events))
  ) then
    perform integrator.emit_event(p_tenant_id, p_audit_action, jsonb_build_object(
      'submission_id', p_id,
      'external_reference', p_external_reference,
      'module', p_module,
      'tier', p_tier,
      'status', p_status,
      'item_count', item_count,
      'accepted_count', p_accepted_count,
      'failed_count', p_failed_count
    ));
  end if;

  return query select p_id, p_tenant_id, p_external_reference, p_module, p_tier, item_count, p_accepted_count,
                      p_failed_count, p_status, p_created_by, created;
end;
$$;
