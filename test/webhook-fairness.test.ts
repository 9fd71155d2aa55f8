// Fairness between tenants (README, Webhooks → Fairness): a tenant's backlog of deliveries to endpoints
// that hang until the timeout neither delays another tenant's delivery nor slows queueing, and a tenant
// alone still gets all of WORKER_CONCURRENCY. A real worker, a real HTTPS receiver on loopback.
import pg from "pg";
import t from "tap";
import { emitEvent } from "../db/events.ts";
import { createTestTenant } from "./helpers/server.ts";
import { startWebhookRig, testCa } from "./helpers/webhooks.ts";
import { waitFor } from "./helpers/wait.ts";

const ca = testCa(t);

t.test(
  "tenant B's first attempt starts within 2 s of its event while tenant A has 2,000 due deliveries to endpoints that hang until the timeout; A alone holds all WORKER_CONCURRENCY slots and never the spare",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      env: {
        WORKER_CONCURRENCY: "5",
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

    const { startWorker } = await import("../worker/runner.ts");
    const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
    t.teardown(() => worker.stop());
    const hanging = () => rig.receiver.received.filter((request) => request.path.startsWith("/hang")).length;
    t.equal(
      await waitFor(
        async () => hanging(),
        (count) => count >= 5,
        { seconds: 20 },
      ),
      5,
      "A's first 5 attempts hang",
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
    t.equal(hanging(), 5, "A held WORKER_CONCURRENCY (5) slots, the whole of what one tenant may use; never the spare");
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
    // Before migration 0006 this read every queued job (10,220 here); now it does not grow with the queue.
    t.ok(Number(rows[0]?.seq_tup_read ?? 0) < 100, "the queued jobs are not scanned");
  },
);
