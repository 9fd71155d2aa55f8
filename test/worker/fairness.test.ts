// Fairness between tenants (docs/architecture.md, fairness between tenants): a tenant's backlog of deliveries to endpoints
// that hang until the timeout neither delays another tenant's delivery nor slows queueing, and a tenant
// alone still gets all of WORKER_CONCURRENCY. A real worker, a real HTTPS receiver on loopback.
import pg from "pg";
import t from "tap";
import { emitEvent } from "../../db/events.ts";
import { createTestTenant } from "../helpers/server.ts";
import { deliveryJobs, startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);

t.test(
  "tenant B's first attempt starts within 2 s of its event while tenant A has 2,000 due deliveries to endpoints that hang until the timeout; A alone holds all WORKER_CONCURRENCY slots and its share of WORKER_MAX_SENDS, never the spare",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      env: {
        WORKER_CONCURRENCY: "5",
        // WORKER_MAX_SENDS as by default: 64 attempts in flight at once, 48 of them for one tenant at most,
        // more than a connection pool's 20 to one host (all the endpoints here share the receiver's).
        WORKER_MAX_SENDS: "64",
        WEBHOOK_TIMEOUT_MS: "6000",
        MAX_DELIVERY_ATTEMPTS: "1",
        SHUTDOWN_TIMEOUT_MS: "500",
      },
      answer: (request) => (request.path.startsWith("/hang") ? "stall" : { status: 204 }),
      worker: false,
    });
    const { server } = rig;
    const tenantA = rig.tenant;
    // Tenant A: 50 subscriptions x 40 events = 2,000 deliveries, all due before any worker runs.
    for (let i = 0; i < 50; i++) await rig.subscribe(rig.receiver.url(`/hang-${i}`));
    const data = { scorecard_id: crypto.randomUUID() };
    await server.services.db.transaction(async (trx) => {
      for (let i = 0; i < 40; i++) await emitEvent(trx, tenantA.tenantId, "scorecard.created", data);
    });
    const tenantB = await createTestTenant(server.services, ["client_admin"], "Tenant B");
    const subscribeB = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: tenantB.token,
      json: { url: rig.receiver.url("/tenant-b"), events: ["*"] },
    });
    t.equal(subscribeB.status, 201);

    const { startWorker } = await import("../../worker/runner.ts");
    const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
    t.teardown(() => worker.stop());
    const hanging = () => rig.receiver.received.filter((request) => request.path.startsWith("/hang")).length;
    t.equal(
      await waitFor(
        async () => hanging(),
        (count) => count >= 48,
        { seconds: 20 },
      ),
      48,
      "A's first 48 attempts hang (its 5 jobs' deliveries send concurrently, up to its share of the sends)",
    );

    const emittedAt = performance.now();
    await emitEvent(server.services.db, tenantB.tenantId, "scorecard.created", data);
    const [arrived] = await waitFor(
      async () => rig.receiver.receivedAt("/tenant-b"),
      (requests) => requests.length > 0,
      { seconds: 10 },
    );
    const waitedMs = arrived ? arrived.receivedAt - emittedAt : Infinity;
    t.comment(`tenant B's first attempt started ${Math.round(waitedMs)} ms after its event`);
    t.ok(waitedMs < 2000, `B waited ${Math.round(waitedMs)} ms (< 2000 ms)`);
    t.equal(hanging(), 48, "A held its share of the sends (48 of WORKER_MAX_SENDS 64), never the spare");
    t.same(worker.slots.snapshot().byTenant[tenantA.tenantId], 5, "and WORKER_CONCURRENCY (5) slots, never the spare");
    const pendingA = await server.services
      .db("integrator.webhook_deliveries")
      .where({ tenant_id: tenantA.tenantId, status: "pending" })
      .count<{ count: number }[]>("* as count");
    t.ok(Number(pendingA[0]?.count) >= 1990, "A's backlog was still there");
  },
);

t.test(
  "a backlog does not slow queueing: with 10,000 queued jobs, emit_event on a connection that queued before does not scan them",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false });
    const { server } = rig;
    await rig.subscribe(rig.receiver.url("/queued"));
    const client = new pg.Client({ connectionString: server.databaseUrl });
    await client.connect();
    t.teardown(() => client.end());
    const emit = () =>
      client.query("select integrator.emit_event($1::uuid, 'scorecard.created', $2::jsonb)", [
        rig.tenant.tenantId,
        JSON.stringify({ scorecard_id: crypto.randomUUID() }),
      ]);
    // Plans cached while the queue is short are what a long-lived pool connection keeps using.
    for (let i = 0; i < 20; i++) await emit();
    await client.query(
      `select graphile_worker.add_jobs(array_agg(row('deliver_webhook', json_build_object('n', n), null, null, 10::smallint,
         'backlog:' || n, null, null)::graphile_worker.job_spec)) from generate_series(1, 10000) n`,
    );
    await client.query("begin");
    await emit();
    const { rows } = await client.query<{ seq_tup_read: string; idx_scan: string }>(
      `select seq_tup_read, idx_scan from pg_stat_xact_user_tables
        where schemaname = 'graphile_worker' and relname = '_private_jobs'`,
    );
    await client.query("commit");
    t.comment(`job rows read by a sequential scan while queueing one delivery: ${rows[0]?.seq_tup_read ?? 0}`);
    // With generic plans this read every queued job (10,220 here); queue_delivery_jobs forces custom plans
    // (db/functions/queue_delivery_jobs.sql), so it does not grow with the queue.
    t.ok(Number(rows[0]?.seq_tup_read ?? 0) < 100, "the queued jobs are not scanned");
  },
);

t.test(
  "an event's deliveries are queued together, ranked after the tenant's backlog: one job for the event's deliveries at the backlog's rank, for their first attempt, with its tenant flag and 10 attempts",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false });
    const { server } = rig;
    const subscriptions = [];
    for (let i = 0; i < 3; i++) subscriptions.push((await rig.subscribe(rig.receiver.url(`/ranked-${i}`))).id);
    await rig.subscribe(rig.receiver.url("/other-kind"), ["document.completed"]);
    const jobsOf = (deliveryIds: string[]) => deliveryJobs(server.services.db, deliveryIds);
    const emitAndFind = async () => {
      const before = new Date(Date.now() - 1000);
      const count = await emitEvent(server.services.db, rig.tenant.tenantId, "scorecard.created", {
        scorecard_id: crypto.randomUUID(),
      });
      const ids = await server.services
        .db("integrator.webhook_deliveries")
        .where({ tenant_id: rig.tenant.tenantId })
        .where("created_at", ">=", before)
        .pluck<string[]>("id");
      return { count, ids };
    };

    const first = await emitAndFind();
    t.equal(first.count, 3, "one delivery per matching subscription (not the one for another kind)");
    const firstJobs = await jobsOf(first.ids);
    t.same(
      firstJobs.map((job) => [job.task, job.priority, [...(job.payload.delivery_ids ?? [])].sort()]),
      [["deliver_webhooks", 0, [...first.ids].sort()]],
      "with no backlog, one job for the event's three deliveries, at rank 0 (migration 0023)",
    );
    for (const job of firstJobs) {
      t.equal(job.payload.attempts, 0, "for their first attempt");
      t.equal(job.key, null, "with no job key (migration 0021)");
      t.same(job.flags, { [`tenant:${rig.tenant.tenantId}`]: true }, "flagged with its tenant");
      t.equal(job.max_attempts, 10);
      t.equal(job.payload.tenant_id, rig.tenant.tenantId);
    }

    const second = await emitAndFind();
    const secondIds = second.ids.filter((id) => !first.ids.includes(id));
    t.same(
      (await jobsOf(secondIds)).map((job) => job.priority),
      [3],
      "with 3 pending, the next event's job ranks 3",
    );

    const jobCount = async () =>
      Number(
        (
          await server.services.db.raw<{ rows: { n: string }[] }>(
            "select count(*) as n from graphile_worker._private_jobs",
          )
        ).rows[0]?.n,
      );
    const jobsBefore = await jobCount();
    const quiet = await createTestTenant(server.services, ["client_admin"], "No subscribers");
    t.equal(
      await emitEvent(server.services.db, quiet.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() }),
      0,
      "an event no subscription matches makes no delivery",
    );
    t.equal(await jobCount(), jobsBefore, "and queues no job");

    // Fan-out 1 (one matching subscription) queues its single job the same way.
    const single = await createTestTenant(server.services, ["client_admin"], "One subscriber");
    const subscribed = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: single.token,
      json: { url: rig.receiver.url("/single"), events: ["*"] },
    });
    t.equal(subscribed.status, 201);
    for (let i = 0; i < 2; i++)
      t.equal(
        await emitEvent(server.services.db, single.tenantId, "scorecard.created", {
          scorecard_id: crypto.randomUUID(),
        }),
        1,
      );
    const singleIds = await server.services
      .db("integrator.webhook_deliveries")
      .where({ tenant_id: single.tenantId })
      .pluck<string[]>("id");
    const singleJobs = await jobsOf(singleIds);
    t.same(
      singleJobs.map((job) => job.priority),
      [0, 1],
      "one delivery per event: ranks 0, then 1 behind the first",
    );
    for (const job of singleJobs) {
      t.equal(job.payload.attempts, 0);
      t.equal(job.key, null);
      t.same(job.flags, { [`tenant:${single.tenantId}`]: true });
      t.equal(job.max_attempts, 10);
    }
  },
);
