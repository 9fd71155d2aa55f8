// Issue 13 (performance), after 0021: the deliver_webhook jobs still queued from before 0021 are given
// the attempt they are for.
//
// Such a job carries no `attempts` and keeps its key `deliver_webhook:<delivery id>`. Before 0021 the
// retry that an attempt queued had the same key and so superseded the job still running; since 0021 the
// retry has no key. A job from before 0021 whose worker died after recording an attempt and before
// completing would therefore be released and send again at once, beside the scheduled retry. Each such
// job now names the attempts its delivery has (what it was queued for, unless its attempt is being made
// right now, in which case the run that records it makes the count higher and a rerun does nothing),
// which is what 0021's jobs carry from the start. Jobs of deliveries that no longer exist stay as they
// are: the task finds nothing to send.
import type { Knex } from "knex";

const UUID = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

export async function up(knex: Knex): Promise<void> {
  // On a new database graphile-worker's schema comes after these migrations (app/lifecycle.ts), with no jobs.
  await knex.raw(`
    do $$
    begin
      if to_regclass('graphile_worker._private_jobs') is null then
        return;
      end if;
      -- A payload's ids are cast only when they are uuids (anything sharing the database can queue a job).
      update graphile_worker._private_jobs as j
         set payload = (j.payload::jsonb || jsonb_build_object('attempts', d.attempts))::json
        from graphile_worker._private_tasks as t, integrator.webhook_deliveries as d
       where t.id = j.task_id and t.identifier = 'deliver_webhook' and j.payload->'attempts' is null
         and d.tenant_id = case when j.payload->>'tenant_id' ~* '${UUID}' then (j.payload->>'tenant_id')::uuid end
         and d.id = case when j.payload->>'delivery_id' ~* '${UUID}' then (j.payload->>'delivery_id')::uuid end;
    end;
    $$;
  `);
}

export async function down(): Promise<void> {
  // Nothing to undo: a job that names its attempt runs the same under 0021 and after it.
}
