// Issue 13 (performance): emit_event's own statements keep their plans for the connection. 0006 gave
// emit_event plan_cache_mode = force_custom_plan so that graphile_worker.add_job, called inside it,
// plans against the job table as it is (a generic plan made while the table was small seq-scanned a
// grown backlog). integrator.queue_delivery_jobs (0016), through which every job is queued, carries the
// same setting itself, and a function's setting holds for everything it calls; so emit_event no longer
// needs it, and its data check, backlog count and delivery insert stop being planned on every event.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw("alter function integrator.emit_event(uuid, text, jsonb) reset plan_cache_mode");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("alter function integrator.emit_event(uuid, text, jsonb) set plan_cache_mode = force_custom_plan");
}
