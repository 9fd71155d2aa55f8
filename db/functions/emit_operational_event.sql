-- integrator.emit_operational_event: an operational event about one of the tenant's endpoints
-- (webhook.endpoint_disabled, webhook.delivery_exhausted) becomes deliveries, in the caller's transaction,
-- as emit_event does for a lifecycle event, with two differences: the subscription the event is about
-- (p_about) never receives it, and only the subscriptions naming the kind take it (`*` does not). A
-- function of its own rather than an argument of emit_event: emit_event's text and plan stay those of the
-- hot path, and its signature the one other platform services call. Called by record_delivery_attempt,
-- in the statement that disables the endpoint or ends the delivery. Returns the number of deliveries.
create or replace function integrator.emit_operational_event(p_tenant_id uuid, p_kind text, p_data jsonb, p_about uuid)
returns integer
language plpgsql volatile
as $$
declare
  problem text;
  new_event uuid := integrator.uuid_v7();
  envelope jsonb;
  backlog integer;
  delivery_ids uuid[];
begin
  if p_kind not like 'webhook.%' then
    raise exception 'emit_operational_event: % is not an operational kind', p_kind using errcode = 'invalid_parameter_value';
  end if;
  problem := integrator.webhook_event_data_problem(p_kind, p_data);
  if problem is not null then
    raise exception 'emit_operational_event: %', problem using errcode = 'invalid_parameter_value';
  end if;
  envelope := jsonb_build_object(
    'id', 'evt_' || new_event,
    'event', p_kind,
    'tenant_id', p_tenant_id,
    'timestamp', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'data', p_data
  );
  backlog := integrator.delivery_backlog(p_tenant_id);
  with inserted as (
    insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_id, event_type, payload)
    select s.tenant_id, s.id, new_event, p_kind, envelope
      from integrator.webhook_subscriptions s
     where s.tenant_id = p_tenant_id
       and s.is_active
       and s.id <> p_about
       and p_kind = any (s.events)
    returning id
  )
  select array_agg(id) into delivery_ids from inserted;
  if delivery_ids is null then
    return 0;
  end if;
  insert into integrator.webhook_events (tenant_id, id, event_type, payload)
  values (p_tenant_id, new_event, p_kind, envelope);
  return integrator.queue_delivery_jobs(p_tenant_id, delivery_ids, backlog);
end;
$$;
