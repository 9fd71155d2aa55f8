// Issue 13 (performance): a deliver_webhook job carries the attempt it is for, instead of a job key.
//
// Since 0003 every job had the key `deliver_webhook:<delivery id>`, so that the retry queued while a job
// still runs supersedes it (graphile-worker sets a running keyed job's attempts to its maximum): a
// worker that died after recording an attempt, before completing its job, left a job that must not send
// again beside the scheduled retry. A keyed add_job cost about 0.35 ms of PostgreSQL more per job than
// one without (BENCHMARKS.md, sixth session), a sixth of a delivery's PostgreSQL time.
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
import { QUEUE_DELIVERY_JOBS } from "./0016_emit_event_one_add_jobs.ts";
import { RETRY_OF_0018, recordDeliveryAttempt } from "./0018_delivery_attempt_functions.ts";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function integrator.queue_delivery_jobs(uuid, uuid[], integer, timestamptz);

    create function integrator.queue_delivery_jobs(
      tenant_id uuid, delivery_ids uuid[], first_rank integer, run_at timestamptz default null, attempts integer default 0
    ) returns integer
    language plpgsql volatile
    set plan_cache_mode = force_custom_plan
    as $$
    begin
      if coalesce(cardinality(queue_delivery_jobs.delivery_ids), 0) = 0 then
        return 0;
      end if;
      -- One delivery (fan-out 1, a retry, a resend): add_job, whose arguments are plain expressions.
      if cardinality(queue_delivery_jobs.delivery_ids) = 1 then
        perform graphile_worker.add_job(
          'deliver_webhook',
          json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', queue_delivery_jobs.delivery_ids[1],
                            'attempts', queue_delivery_jobs.attempts),
          run_at => queue_delivery_jobs.run_at,
          max_attempts => 10,
          priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
          flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
        );
        return 1;
      end if;
      -- Several: one insert and one notification for all of them.
      perform graphile_worker.add_jobs((
        select array_agg(row(
                 'deliver_webhook',
                 json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', d.id,
                                   'attempts', queue_delivery_jobs.attempts),
                 null,
                 queue_delivery_jobs.run_at,
                 10::smallint,
                 null,
                 least(greatest(queue_delivery_jobs.first_rank + d.k::integer - 1, 0), 1000)::smallint,
                 array['tenant:' || queue_delivery_jobs.tenant_id::text]
               )::graphile_worker.job_spec order by d.k)
          from unnest(queue_delivery_jobs.delivery_ids) with ordinality as d(id, k)
      ));
      return cardinality(queue_delivery_jobs.delivery_ids);
    end;
    $$;

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
