// Webhook subscriptions, their deliveries, and integrator.emit_event: the one entry through which a
// lifecycle event becomes deliveries (docs/decisions.md §5). Tenant-owned tables lead every key and
// index with tenant_id (docs/decisions.md §10).
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table integrator.webhook_subscriptions (
      tenant_id uuid not null references integrator.tenants (id),
      id uuid not null default integrator.uuid_v7(),
      url text not null,
      events text[] not null check (cardinality(events) between 1 and 20),
      secret_encrypted text not null,
      is_active boolean not null default true,
      created_by text not null,
      created_at timestamptz not null default now(),
      deactivated_at timestamptz,
      primary key (tenant_id, id)
    );
    -- The list operation and emit_event's fan-out both read a tenant's active subscriptions.
    create index webhook_subscriptions_active on integrator.webhook_subscriptions (tenant_id, created_at, id) where is_active;

    create table integrator.webhook_deliveries (
      tenant_id uuid not null,
      id uuid not null default integrator.uuid_v7(),
      subscription_id uuid not null,
      event_type text not null,
      payload jsonb not null,
      status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
      attempts integer not null default 0 check (attempts >= 0),
      last_attempt_at timestamptz,
      response_code integer,
      error_message text check (char_length(error_message) <= 500),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, id),
      foreign key (tenant_id, subscription_id) references integrator.webhook_subscriptions (tenant_id, id)
    );
    -- GET /v1/webhooks/deliveries: the tenant's newest first.
    create index webhook_deliveries_newest on integrator.webhook_deliveries (tenant_id, created_at desc, id desc);
    -- Deactivating a subscription fails its pending deliveries.
    create index webhook_deliveries_pending on integrator.webhook_deliveries (tenant_id, subscription_id) where status = 'pending';

    -- Why the data of an event of this kind does not match the document's webhooks schemas, or null.
    -- Each field is "type" (required), "type|null" (required, may be null) or "type|absent" (optional);
    -- only scalar identifiers and statuses exist, so filenames, metadata or text cannot slip through.
    create function integrator.webhook_event_data_problem(kind text, data jsonb) returns text
    language plpgsql immutable as $$
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
      end::jsonb;
      if fields is null then
        return format('unknown event kind %L', kind);
      end if;
      if data is null or jsonb_typeof(data) <> 'object' then
        return 'data must be a JSON object';
      end if;
      -- (knex reads a question mark as a placeholder even here, so key tests use "-> key is null".)
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
          else false
        end;
        if not matches then
          return format('data field %L must be %s', field.key, case expected
            when 'uuid' then 'a UUID string'
            when 'text' then 'a string'
            when 'count' then 'a whole number of at least 0'
            else 'an intake submission status' end);
        end if;
      end loop;
      return null;
    end;
    $$;

    -- Fans one lifecycle event out to the tenant's matching active subscriptions, in the caller's
    -- transaction: one pending delivery each, with its deliver_webhook job queued alongside, so a
    -- rollback leaves neither and a commit leaves both. Returns the number of deliveries.
    create function integrator.emit_event(tenant_id uuid, kind text, data jsonb) returns integer
    language plpgsql volatile as $$
    #variable_conflict use_column
    declare
      problem text;
      envelope jsonb;
      delivery record;
      deliveries integer := 0;
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
      for delivery in
        insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload)
        select s.tenant_id, s.id, emit_event.kind, envelope
        from integrator.webhook_subscriptions s
        where s.tenant_id = emit_event.tenant_id
          and s.is_active
          and (emit_event.kind = any (s.events) or '*' = any (s.events))
        returning tenant_id, id
      loop
        perform graphile_worker.add_job(
          'deliver_webhook',
          json_build_object('tenant_id', delivery.tenant_id, 'delivery_id', delivery.id),
          max_attempts => 10,
          job_key => 'deliver_webhook:' || delivery.id
        );
        deliveries := deliveries + 1;
      end loop;
      return deliveries;
    end;
    $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function if exists integrator.emit_event(uuid, text, jsonb);
    drop function if exists integrator.webhook_event_data_problem(text, jsonb);
    drop table if exists integrator.webhook_deliveries;
    drop table if exists integrator.webhook_subscriptions;
  `);
}
