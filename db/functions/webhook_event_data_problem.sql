-- integrator.webhook_event_data_problem: why the data of an event of this kind does not match the
-- document's webhooks schemas, or null. emit_event refuses an event for which it says anything.
-- Each field is "type" (required), "type|null" (required, may be null) or "type|absent" (optional);
-- only scalar identifiers and statuses exist, so filenames, metadata or text cannot slip through. The
-- types: uuid, text, count (a whole number of at least 0), intake_status, event_id (`evt_` and a UUID) and
-- event_kind (a kind of this table).
-- The table follows the document's data schema of each kind by hand (a kind's line is added with the kind:
-- CONTRIBUTING.md, "Add an event kind"); test/db/webhook-event-data.test.ts fails while it lags.
create or replace function integrator.webhook_event_data_problem(kind text, data jsonb) returns text
language plpgsql immutable
as $$
declare
  fields jsonb;
  field record;
  spec text;
  value jsonb;
  optional boolean;
  nullable boolean;
  expected text;
  matches boolean;
begin
  fields := case kind
    when 'intake.submitted' then '{"submission_id":"uuid","external_reference":"text|null","module":"text|null","tier":"text|null","status":"intake_status","item_count":"count","accepted_count":"count","failed_count":"count"}'
    when 'intake.batch_submitted' then '{"submission_id":"uuid","external_reference":"text|null","module":"text|null","tier":"text|null","status":"intake_status","item_count":"count","accepted_count":"count","failed_count":"count"}'
    when 'document.status_changed' then '{"document_id":"uuid","submission_id":"uuid|absent","item_id":"uuid|absent","status":"text","previous_status":"text|absent"}'
    when 'document.uploaded' then '{"document_id":"uuid","submission_id":"uuid|absent","item_id":"uuid|absent","status":"text","previous_status":"text|absent"}'
    when 'document.completed' then '{"document_id":"uuid","submission_id":"uuid|absent","item_id":"uuid|absent","status":"text","previous_status":"text|absent"}'
    when 'adjudication.case_created' then '{"case_id":"uuid","document_id":"uuid|absent","status":"text","outcome":"text|absent"}'
    when 'adjudication.case_resolved' then '{"case_id":"uuid","document_id":"uuid|absent","status":"text","outcome":"text|absent"}'
    when 'scorecard.created' then '{"scorecard_id":"uuid","document_id":"uuid|absent","case_id":"uuid|absent"}'
    when 'webhook.endpoint_disabled' then '{"subscription_id":"uuid","reason":"text"}'
    when 'webhook.delivery_exhausted' then '{"delivery_id":"uuid","subscription_id":"uuid","event_id":"event_id","event_type":"event_kind","attempts":"count","last_response_code":"count|null"}'
  end::jsonb;
  if fields is null then
    return format('unknown event kind %L', kind);
  end if;
  if data is null or jsonb_typeof(data) <> 'object' then
    return 'data must be a JSON object';
  end if;
  -- A key is tested with "-> key is null" rather than the ? operator, which knex (running the migrations
  -- that wrote earlier versions of this text) reads as a placeholder.
  for field in select key from jsonb_object_keys(data) as key where fields -> key is null loop
    return format('data field %L is not part of %s events', field.key, kind);
  end loop;
  for field in select key, spec_value #>> '{}' as spec from jsonb_each(fields) as f(key, spec_value) loop
    spec := field.spec;
    optional := spec like '%|absent';
    nullable := spec like '%|null';
    expected := split_part(spec, '|', 1);
    if data -> field.key is null then
      if optional then continue; end if;
      return format('data field %L is required for %s events', field.key, kind);
    end if;
    value := data -> field.key;
    if jsonb_typeof(value) = 'null' then
      if nullable then continue; end if;
      return format('data field %L must not be null', field.key);
    end if;
    -- (plpgsql ends an IF condition at the first THEN, so the check is computed first.)
    matches := case expected
      when 'uuid' then jsonb_typeof(value) = 'string' and (value #>> '{}') ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
      when 'text' then jsonb_typeof(value) = 'string'
      when 'count' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric >= 0 and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
      when 'intake_status' then jsonb_typeof(value) = 'string' and (value #>> '{}') in ('received', 'processing', 'completed', 'completed_with_errors', 'rejected')
      when 'event_id' then jsonb_typeof(value) = 'string' and (value #>> '{}') ~ '^evt_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
      -- A kind this table knows: asked about no data, the check names a field or nothing, never the kind.
      when 'event_kind' then jsonb_typeof(value) = 'string'
        and coalesce(integrator.webhook_event_data_problem(value #>> '{}', '{}'::jsonb), '') not like 'unknown event kind%'
      else false
    end;
    if not matches then
      return format('data field %L must be %s', field.key, case expected
        when 'uuid' then 'a UUID string'
        when 'text' then 'a string'
        when 'count' then 'a whole number of at least 0'
        when 'event_id' then 'an event id (evt_ and a UUID in lower case)'
        when 'event_kind' then 'an event kind'
        else 'an intake submission status' end);
    end if;
  end loop;
  return null;
end;
$$;
