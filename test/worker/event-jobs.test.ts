// An event's deliveries in one job (deliver_webhooks, db/functions/queue_delivery_jobs.sql): each is sent as its own
// deliver_webhook job would send it; a rerun sends only what is still at the job's attempt; a worker that
// stops leaves the deliveries it had not started unspent for the job's next run; an event's deliveries
// send concurrently within the worker's bounds per worker, per endpoint and per tenant (worker/fairness.ts
// SendLimits).
// A real worker, a real HTTPS receiver on loopback.
import t from "tap";
import { startWorker } from "../../worker/runner.ts";
import { SendLimits } from "../../worker/fairness.ts";
import { taskList } from "../../worker/tasks/index.ts";
import { deliveryJobs, startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);

t.test(
  "an event's deliveries are sent by its one job, each once; a delivery an earlier run already sent is not sent again",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false });
    const { server } = rig;
    const paths = ["/event-a", "/event-b", "/event-c"];
    for (const path of paths) await rig.subscribe(rig.receiver.url(path));
    await rig.emitIntake();
    const deliveries = await rig.deliveries();
    t.equal(deliveries.length, 3);
    const jobs = await deliveryJobs(
      server.services.db,
      deliveries.map((delivery) => delivery.id),
    );
    t.same(
      jobs.map((job) => job.task),
      ["deliver_webhooks"],
      "one job for the event",
    );
    // As an earlier run of the job leaves it when its worker died after sending one of them.
    const [sent] = deliveries;
    await server.services
      .db("integrator.webhook_deliveries")
      .where({ id: sent?.id })
      .update({ status: "delivered", attempts: 1, response_code: 204 });

    const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
    t.teardown(() => worker.stop());
    t.equal(await rig.jobsDrained(), 0, "the job ran and completed");
    const received = rig.receiver.received.map((request) => String(request.headers["x-service-review-delivery"]));
    t.same(
      [...received].sort(),
      deliveries
        .filter((delivery) => delivery.id !== sent?.id)
        .map((delivery) => delivery.id)
        .sort(),
      "the two others were sent, once each; the one already sent was not",
    );
    const after = await rig.deliveries();
    for (const delivery of after)
      t.match(delivery, { status: "delivered", attempts: 1 }, `${delivery.id} delivered with one attempt`);
  },
);

t.test(
  "a worker that stops mid-job leaves the event's deliveries it had not started at their first attempt, in the job, for its next run",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      worker: false,
      env: { WORKER_CONCURRENCY: "1", WORKER_MAX_SENDS: "1", SHUTDOWN_TIMEOUT_MS: "300", WEBHOOK_TIMEOUT_MS: "30000" },
      answer: () => "stall",
    });
    const { server } = rig;
    for (let i = 0; i < 3; i++) await rig.subscribe(rig.receiver.url(`/stall-${i}`));
    await rig.emitIntake();
    const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
    await waitFor(
      async () => rig.receiver.received.length,
      (count) => count >= 1,
      { seconds: 20 },
    );
    await worker.stop();
    t.equal(rig.receiver.received.length, 1, "one delivery was sending (WORKER_MAX_SENDS 1), the others waited");
    const deliveries = await rig.deliveries();
    const interrupted = String(rig.receiver.received[0]?.headers["x-service-review-delivery"]);
    for (const delivery of deliveries) {
      if (delivery.id === interrupted)
        t.match(delivery, { status: "pending", attempts: 1 }, "the one cut short is recorded, its retry queued");
      else t.match(delivery, { status: "pending", attempts: 0 }, "the others kept their first attempt");
    }
    const waiting = deliveries.filter((delivery) => delivery.id !== interrupted).map((delivery) => delivery.id);
    const jobs = await deliveryJobs(server.services.db, waiting);
    t.same(
      jobs.map((job) => [job.task, job.locked_at]),
      [["deliver_webhooks", null]],
      "the event's job is queued again, unlocked",
    );
  },
);

t.test(
  "SendLimits: at most the worker's, an endpoint's and a tenant's bound at once; a freed place goes to the tenant, then the job, with the fewest under way, then the first to ask",
  async (t) => {
    // 4 in the worker, so 3 for one tenant (a spare quarter for the others); 2 per endpoint.
    const limits = new SendLimits({ perWorker: 4, perEndpoint: 2 });
    t.equal(limits.perTenant, 3);
    const started: string[] = [];
    const finish = new Map<string, () => void>();
    const send = (tenant: string, endpoint: string, job: string, name: string) =>
      limits.run({ tenant, endpoint, job }, async () => {
        started.push(name);
        await new Promise<void>((resolve) => finish.set(name, resolve));
        return name;
      });
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    // Tenant a's job 1: three to endpoint x, one to y; job 2: two to z. Tenant b: one to w, then one more.
    const results = [send("a", "x", "1", "x1"), send("a", "x", "1", "x2"), send("a", "x", "1", "x3")];
    results.push(send("a", "y", "1", "y1"), send("a", "z", "2", "z1"), send("a", "z", "2", "z2"));
    await tick();
    t.same(started, ["x1", "x2", "y1"], "two to x (its bound), then y: three, a's share; the rest wait");
    results.push(send("b", "w", "3", "w1"));
    await tick();
    t.same(started.at(-1), "w1", "b's first send finds the spare place at once");
    t.same(limits.snapshot(), {
      sending: 4,
      waiting: 3,
      byTenant: { a: 3, b: 1 },
      byEndpoint: { x: 2, y: 1, w: 1 },
    });
    results.push(send("b", "w", "3", "w2"));
    finish.get("x1")?.();
    await tick();
    t.same(started.at(-1), "w2", "a freed place goes to the tenant with fewer under way (b: 1, a: 2)");
    finish.get("w1")?.();
    await tick();
    t.same(started.at(-1), "z1", "then a's job 2 (none under way) before job 1's third to x");
    finish.get("y1")?.();
    await tick();
    t.same(started.at(-1), "x3", "one each under way: the first to ask");
    for (const name of ["x2", "z1", "x3", "w2"]) finish.get(name)?.();
    await tick();
    t.same(started.at(-1), "z2");
    finish.get("z2")?.();
    t.same(await Promise.all(results), ["x1", "x2", "x3", "y1", "z1", "z2", "w1", "w2"]);
    t.same(limits.snapshot(), { sending: 0, waiting: 0, byTenant: {}, byEndpoint: {} }, "nothing left counted");
  },
);

t.test(
  "a deliver_webhooks job renews its lock as its deliveries end, so a long job with progress is not reported overdue",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      worker: false,
      // One attempt at a time: the job's deliveries end one after another.
      env: { WORKER_CONCURRENCY: "1", WORKER_MAX_SENDS: "1" },
      answer: () => ({ status: 204, delayMs: 400 }),
    });
    const { server } = rig;
    for (let i = 0; i < 3; i++) await rig.subscribe(rig.receiver.url(`/slow-${i}`));
    await rig.emitIntake();
    const worker = await startWorker(server.services, server.databaseUrl, {
      pollInterval: 200,
      tasks: taskList(server.services, { lockRenewalMs: 0 }),
    });
    t.teardown(() => worker.stop());
    const lockedAt = async () =>
      (
        await server.services
          .db("graphile_worker._private_jobs as j")
          .join("graphile_worker._private_tasks as k", "k.id", "j.task_id")
          .where("k.identifier", "deliver_webhooks")
          .first<{ locked_at: Date | null } | undefined>("j.locked_at")
      )?.locked_at ?? null;
    await waitFor(
      async () => rig.receiver.received.length,
      (count) => count >= 1,
      { seconds: 20 },
    );
    const first = await lockedAt();
    t.ok(first, "locked while its first delivery is sent");
    await waitFor(
      async () => rig.receiver.received.length,
      (count) => count >= 3,
      { seconds: 20 },
    );
    const later = await lockedAt();
    t.ok(later && first && later.getTime() > first.getTime(), "renewed after its first deliveries ended");
    t.equal(await rig.jobsDrained(), 0, "and completed");
  },
);
