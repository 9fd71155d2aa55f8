// Issue 13 (performance): a deliver_webhook job carries the attempt it is for, instead of a job key.
//
// Since 0003 every job had the key `deliver_webhook:<delivery id>`, so that the retry queued while a job
// still runs supersedes it (graphile-worker sets a running keyed job's attempts to its maximum): a
// worker that died after recording an attempt, before completing its job, left a job that must not send
// again beside the scheduled retry. A keyed add_job cost about 0.35 ms of PostgreSQL more per job than
// one without (docs/performance.md, changes the figures justify), a sixth of a delivery's PostgreSQL time.
//
// Now the payload says how many attempts the delivery had when the job was queued (`attempts`: 0 from
// emit_event and resend, n after the n-th attempt's retry), and the task sends only while the delivery
// still has exactly that many (worker/tasks/deliver_webhook.ts); a job whose attempt another run already
// recorded finds a higher count and does nothing. The same guarantee, checked where the delivery is
// read anyway, and the leftover job completes instead of staying in the queue with its attempts spent.
// Jobs queued before this migration carry no `attempts` and keep their key; the task runs them as before.
//
// queue_delivery_jobs keeps plan_cache_mode = force_custom_plan: add_jobs still runs its key statement
// (for no key), and its generic plan scans the job table (pg_stat_statements: 420 ms against 67 ms over
// 11 000 calls with a backlog of 2 000).
import type { Knex } from "knex";
import { QUEUE_DELIVERY_JOBS, queueDeliveryJobs, type DeliveryJobIdentity } from "./0016_emit_event_one_add_jobs.ts";
import { RETRY_OF_0018, recordDeliveryAttempt } from "./0018_delivery_attempt_functions.ts";

/** No key; the payload names the attempt, `attempts` (the delivery's attempts when queued, 0 by default). */
export const BY_ATTEMPT: DeliveryJobIdentity = {
  extraParameters: ", attempts integer default 0",
  payload: (deliveryId) =>
    `json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', ${deliveryId}, 'attempts', queue_delivery_jobs.attempts)`,
  key: () => "null",
};

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function integrator.queue_delivery_jobs(uuid, uuid[], integer, timestamptz);

    ${queueDeliveryJobs(BY_ATTEMPT)}

    ${recordDeliveryAttempt(
      "        perform integrator.queue_delivery_jobs(p_tenant_id, array[p_delivery_id], integrator.delivery_backlog(p_tenant_id), p_retry_at, p_attempts_before + 1);",
    )}
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function integrator.queue_delivery_jobs(uuid, uuid[], integer, timestamptz, integer);
    ${QUEUE_DELIVERY_JOBS}
  `);
  await knex.raw(recordDeliveryAttempt(RETRY_OF_0018));
}
