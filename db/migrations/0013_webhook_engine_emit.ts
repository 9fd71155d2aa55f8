// integrator.emit_event queueing each job through integrator.queue_delivery_job (0006: the tenant's
// backlog rank as priority, the tenant flag) with custom plans. Its semantics are 0003's (a disabled
// subscription still gets its delivery row, which the task ends failed unsent; the per-tenant count is
// kept by 0007's triggers). Runs after 0007, which adds the columns and triggers it relies on.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function integrator.emit_event(tenant_id uuid, kind text, data jsonb) returns integer
    language plpgsql volatile
    set plan_cache_mode = force_custom_plan
    as $$
    #variable_conflict use_column
    declare
      problem text;
      envelope jsonb;
      delivery record;
      deliveries integer := 0;
      backlog integer;
    begin
      if emit_event.tenant_id is null then
        raise exception 'emit_event: tenant_id is required' using errcode = 'invalid_parameter_value';
      end if;
      problem := integrator.webhook_event_data_problem(emit_event.kind, emit_event.data);
      if problem is not null then
        raise exception 'emit_event: %', problem using errcode = 'invalid_parameter_value';
      end if;
      envelope := jsonb_build_object(
        'event', emit_event.kind,
        'tenant_id', emit_event.tenant_id,
        -- RFC 3339, UTC, milliseconds; the transaction's time, so every delivery of one event agrees.
        'timestamp', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', emit_event.data
      );
      backlog := integrator.delivery_backlog(emit_event.tenant_id);
      for delivery in
        insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload)
        select s.tenant_id, s.id, emit_event.kind, envelope
        from integrator.webhook_subscriptions s
        where s.tenant_id = emit_event.tenant_id
          and s.is_active
          and (emit_event.kind = any (s.events) or '*' = any (s.events))
        returning tenant_id, id
      loop
        perform integrator.queue_delivery_job(
          delivery.tenant_id, delivery.id, backlog + deliveries, job_key => 'deliver_webhook:' || delivery.id
        );
        deliveries := deliveries + 1;
      end loop;
      return deliveries;
    end;
    $$;
  `);
}

export async function down(): Promise<void> {
  // 0007's version comes back with 0007's own down/up; nothing to undo here beyond that.
}
