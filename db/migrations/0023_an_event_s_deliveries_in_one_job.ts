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

/** integrator.queue_delivery_jobs queueing several deliveries (an event's) as one deliver_webhooks job. */
const QUEUE_DELIVERY_JOBS = `
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
      -- Building the array below is a query planned on every call (custom plans), which made emitting
      -- at fan-out 1 about 8 % slower than add_job (scripts/bench/emit-parts.ts). The same job either way.
      if cardinality(queue_delivery_jobs.delivery_ids) = 1 then
        perform graphile_worker.add_job(
          'deliver_webhook',
          json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', queue_delivery_jobs.delivery_ids[1], 'attempts', queue_delivery_jobs.attempts),
          run_at => queue_delivery_jobs.run_at,
          max_attempts => 10,
          job_key => null,
          priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
          flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
        );
        return 1;
      end if;
      -- Several (an event's): one deliver_webhooks job for all of them.
      perform graphile_worker.add_job(
        'deliver_webhooks',
        json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_ids', queue_delivery_jobs.delivery_ids,
                          'attempts', queue_delivery_jobs.attempts),
        run_at => queue_delivery_jobs.run_at,
        max_attempts => 10,
        priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
        flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
      );
      return cardinality(queue_delivery_jobs.delivery_ids);
    end;
    $$;`;

/** 0021's integrator.queue_delivery_jobs (a deliver_webhook job per delivery), which the down puts back. */
const QUEUE_DELIVERY_JOBS_OF_0021 = `
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
      -- Building the array below is a query planned on every call (custom plans), which made emitting
      -- at fan-out 1 about 8 % slower than add_job (scripts/bench/emit-parts.ts). The same job either way.
      if cardinality(queue_delivery_jobs.delivery_ids) = 1 then
        perform graphile_worker.add_job(
          'deliver_webhook',
          json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', queue_delivery_jobs.delivery_ids[1], 'attempts', queue_delivery_jobs.attempts),
          run_at => queue_delivery_jobs.run_at,
          max_attempts => 10,
          job_key => null,
          priority => least(greatest(queue_delivery_jobs.first_rank, 0), 1000),
          flags => array['tenant:' || queue_delivery_jobs.tenant_id::text]
        );
        return 1;
      end if;
      -- Several: one insert and one notification for all of them (add_job itself is add_jobs of one spec).
      perform graphile_worker.add_jobs((
        select array_agg(row(
                 'deliver_webhook',
                 json_build_object('tenant_id', queue_delivery_jobs.tenant_id, 'delivery_id', d.id, 'attempts', queue_delivery_jobs.attempts),
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
    $$;`;

const DROP = "drop function integrator.queue_delivery_jobs(uuid, uuid[], integer, timestamptz, integer);";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`${DROP}\n${QUEUE_DELIVERY_JOBS}`);
}

/**
 * Back to a job per delivery for what is queued from now on. deliver_webhooks jobs already queued need a
 * worker of this version to run them (the previous one has no such task), so roll back once they are done.
 */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`${DROP}\n${QUEUE_DELIVERY_JOBS_OF_0021}`);
}
