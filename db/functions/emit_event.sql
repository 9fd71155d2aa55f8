-- integrator.emit_event: the one entry through which a lifecycle event becomes deliveries. In the
-- caller's transaction it checks the event's data (webhook_event_data_problem), writes one pending
-- delivery per active subscription of the tenant that takes the kind (a disabled one too: the task ends
-- it failed, unsent; `*` takes every kind but the operational `webhook.*` ones, which a subscription
-- takes only by naming them) and queues their job (queue_delivery_jobs, ranked by the tenant's backlog as counted
-- before the insert), so a rollback leaves neither and a commit leaves both. Returns the number of
-- deliveries. The per-tenant delivery count follows through the webhook_deliveries triggers
-- (count_inserted_webhook_deliveries.sql). Called by record_submission and db/events.ts; the operational
-- kinds about an endpoint come through emit_operational_event.sql, which leaves that endpoint out.
--
-- The event gets its id here (a UUIDv7; `evt_` and the UUID in the envelope's `id`, which the worker
-- sends as webhook-id) and is recorded in webhook_events only when at least one delivery was written:
-- an event no subscription takes costs no row (GET /v1/events lists what was sent to endpoints).
--
-- Its own statements keep their plans for the connection; the custom plans add_job needs are
-- queue_delivery_jobs' setting, which holds for everything it calls.
create or replace function integrator.emit_event(tenant_id uuid, kind text, data jsonb) returns integer
language plpgsql volatile
as $$
#variable_conflict use_column
declare
  problem text;
  new_event uuid := integrator.uuid_v7();
  envelope jsonb;
  backlog integer;
  delivery_ids uuid[];
begin
  if emit_event.tenant_id is null then
    raise exception 'emit_event: tenant_id is required' using errcode = 'invalid_parameter_value';
  end if;
  problem := integrator.webhook_event_data_problem(emit_event.kind, emit_event.data);
  if problem is not null then
    raise exception 'emit_event: %', problem using errcode = 'invalid_parameter_value';
  end if;
  envelope := jsonb_build_object(
    'id', 'evt_' || new_event,
    'event', emit_event.kind,
    'tenant_id', emit_event.tenant_id,
    -- RFC 3339, UTC, milliseconds; the transaction's time, so every delivery of one event agrees.
    'timestamp', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'data', emit_event.data
  );
  backlog := integrator.delivery_backlog(emit_event.tenant_id);
  with inserted as (
    insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_id, event_type, payload)
    select s.tenant_id, s.id, new_event, emit_event.kind, envelope
      from integrator.webhook_subscriptions s
     where s.tenant_id = emit_event.tenant_id
       and s.is_active
       and (emit_event.kind = any (s.events) or ('*' = any (s.events) and emit_event.kind not like 'webhook.%'))
    returning id
  )
  select array_agg(id) into delivery_ids from inserted;
  if delivery_ids is null then
    return 0;
  end if;
  insert into integrator.webhook_events (tenant_id, id, event_type, payload)
  values (emit_event.tenant_id, new_event, emit_event.kind, envelope);
  return integrator.queue_delivery_jobs(emit_event.tenant_id, delivery_ids, backlog);
end;
$$;
