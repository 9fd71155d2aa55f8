// Attempts are I/O: an event's deliveries send concurrently within the worker's bounds on attempts in flight
// (worker/fairness.ts SendLimits), WORKER_MAX_SENDS per worker and WEBHOOK_MAX_SENDS_PER_ENDPOINT per
// endpoint, whatever WORKER_CONCURRENCY (the jobs at once). A real worker, a real HTTPS receiver on loopback
// that holds its answers.
import t from "tap";
import { startWorker } from "../../worker/runner.ts";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);

t.test(
  "an event's 20 deliveries to endpoints that have not answered yet are all under way at once, though the worker runs 2 jobs",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      worker: false,
      env: { WORKER_CONCURRENCY: "2", WORKER_MAX_SENDS: "64", WEBHOOK_TIMEOUT_MS: "30000", SHUTDOWN_TIMEOUT_MS: "300" },
      answer: (request) => (request.path.startsWith("/slow") ? "stall" : { status: 204 }),
    });
    const { server } = rig;
    for (let i = 0; i < 20; i++) await rig.subscribe(rig.receiver.url(`/slow-${i}`));
    await rig.emitIntake();
    const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
    t.teardown(() => worker.stop());
    const received = await waitFor(
      async () => rig.receiver.received.length,
      (count) => count >= 20,
      { seconds: 15 },
    );
    t.equal(received, 20, "every delivery of the event reached its endpoint while none had been answered");
    t.equal(rig.receiver.inFlight(), 20, "20 attempts in flight at once");
  },
);

t.test(
  "WEBHOOK_MAX_SENDS_PER_ENDPOINT: an endpoint that has not answered gets that many attempts at once and no more, while another endpoint's deliveries of the same events go at once",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      worker: false,
      env: {
        WORKER_CONCURRENCY: "5",
        WEBHOOK_MAX_SENDS_PER_ENDPOINT: "2",
        WEBHOOK_TIMEOUT_MS: "30000",
        SHUTDOWN_TIMEOUT_MS: "300",
      },
      answer: (request) => (request.path === "/held" ? "stall" : { status: 204 }),
    });
    const { server } = rig;
    await rig.subscribe(rig.receiver.url("/held"));
    await rig.subscribe(rig.receiver.url("/quick"));
    // Four events, each to both endpoints: four jobs, each reading its two deliveries together and asking
    // for both attempts' places at once.
    for (let i = 0; i < 4; i++) await rig.emitIntake();
    const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
    t.teardown(() => worker.stop());
    t.equal(
      await waitFor(
        async () => rig.receiver.receivedAt("/quick").length,
        (count) => count >= 4,
        { seconds: 15 },
      ),
      4,
      "the quick endpoint got all four events' deliveries: every job had asked for its places",
    );
    t.equal(
      await waitFor(
        async () => rig.receiver.receivedAt("/held").length,
        (count) => count >= 2,
        { seconds: 15 },
      ),
      2,
      "the held endpoint got its bound's worth",
    );
    // Every job asked for its attempts' places before the quick endpoint's attempt of it went out, and no
    // place to the held endpoint frees before its 30 s timeout: the other two wait.
    const quickDone = await waitFor(
      async () => rig.deliveries(),
      (deliveries) => deliveries.filter((delivery) => delivery.status === "delivered").length >= 4,
      { seconds: 15 },
    );
    t.equal(quickDone.filter((delivery) => delivery.status === "delivered").length, 4);
    t.equal(rig.receiver.receivedAt("/held").length, 2, "and no more than 2 of its 4 were sent");
    t.equal(
      quickDone.filter((delivery) => delivery.status === "pending" && delivery.attempts === 0).length,
      4,
      "all four of the held endpoint's deliveries are still at their first attempt",
    );
  },
);
