// Issue 13 (performance): an event's deliveries are sent by ONE job, deliver_webhooks, instead of a
// deliver_webhook job each.
//
// At fan-out 100, graphile-worker's own work per job (queueing it in add_jobs, fetching it, completing
// it) was about a third of a delivery's machine CPU: a no-op job costs about as much. One job per event
// pays it once for all of the event's deliveries (docs/performance.md). The job names the
// deliveries and the attempt they are for (0: their first); worker/tasks/deliver_webhooks.ts sends each
// as deliver_webhook would, at most WORKER_CONCURRENCY of one tenant's at once in a worker, and a rerun
// (after a crash, or a delivery whose handling failed) sends only the ones still at that attempt. A
// delivery's retries, and a resend, remain a deliver_webhook job of their own. The job's priority is the
// tenant's backlog rank as the event found it, and it carries the tenant's flag like every delivery job.
import type { Knex } from "knex";
import { queueDeliveryJobs } from "./0016_emit_event_one_add_jobs.ts";
import { BY_ATTEMPT } from "./0021_delivery_jobs_carry_their_attempt.ts";

const ONE_JOB_FOR_ALL = {
  ...BY_ATTEMPT,
  several: `      -- Several (an event's): one deliver_webhooks job for all of them.
      perform graphile_worker.add_job(
        'deliver_webhooks',
        json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_ids', queue_delivery_jobs.delivery_ids,
                          'attempts', queue_delivery_jobs.attempts),
        run_at => queue_delivery_jobs.run_at,
        max_attempts => 10,
        priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
        flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
      );`,
};

const DROP = "drop function integrator.queue_delivery_jobs(uuid, uuid[], integer, timestamptz, integer);";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`${DROP}\n${queueDeliveryJobs(ONE_JOB_FOR_ALL)}`);
}

/**
 * Back to a job per delivery for what is queued from now on. deliver_webhooks jobs already queued need a
 * worker of this version to run them (the previous one has no such task), so roll back once they are done.
 */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`${DROP}\n${queueDeliveryJobs(BY_ATTEMPT)}`);
}
