// A subscription's delivery rate limit (rate_limit_per_second; db/functions/pace_delivery.sql,
// worker/pacing.ts): a limited endpoint receives a burst at its rate, retries counting too, with nothing
// failed and no attempt spent on waiting, the wait shown as next_attempt_at; and while its backlog drains,
// no worker slot waits for it: another endpoint of the same tenant, and another tenant, still start
// within 2 s; two workers share one limit; and a change of the limit applies to what already waits. A
// real worker (graphile-worker's own poll interval, 1 s), real PostgreSQL, a real HTTPS receiver on
// loopback. Two things are measured: when each attempt started, as the worker records it (what the limit
// promises), and when the receiver had each request (what an endpoint sees: the starts plus connection
// set-up and this process's own scheduling, which the worker and the receiver share).
import { monitorEventLoopDelay } from "node:perf_hooks";
import t from "tap";
import type { Test } from "tap";
import { emitEvent } from "../../db/events.ts";
import { startWorker } from "../../worker/runner.ts";
import { createTestTenant, type TestTenant } from "../helpers/server.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import type { ReceivedRequest } from "../helpers/https-receiver.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);
// The cases share nothing but the CA (each rig has a database of its own) and mostly wait on the pace they
// check; run them at the same time. Each bound allows for the event loop's longest stall, which a case
// measures from its own start.
t.jobs = 5;

/** Timers and the database on one machine. */
const TOLERANCE_MS = 100;

/**
 * The longest this process's event loop stalls from now on (call it as the worker starts): an attempt's
 * start is stamped by the worker after the database let it go, so a stall of the loop between the two moves
 * one start later than its slot (and shortens the gap to the next). A busy machine stretches it; the bound
 * below allows for it.
 */
function loopStalls(t: Test): () => number {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  t.teardown(() => histogram.disable());
  return () => histogram.max / 1e6;
}

/** When the subscription's attempts started, as the worker recorded them (ms since the epoch). */
async function attemptStarts(rig: WebhookRig, subscriptionId: string): Promise<number[]> {
  const rows = await rig.server.services
    .db("integrator.webhook_delivery_attempts as a")
    .join("integrator.webhook_deliveries as d", function () {
      this.on("d.tenant_id", "a.tenant_id").andOn("d.id", "a.delivery_id");
    })
    .where("d.subscription_id", subscriptionId)
    .select<{ attempted_at: Date }[]>("a.attempted_at");
  return rows.map((row) => row.attempted_at.getTime());
}

async function subscribeLimited(
  rig: WebhookRig,
  who: TestTenant,
  path: string,
  events: string[],
  rate: number | null,
): Promise<string> {
  const res = await rig.server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: who.token,
    json: { url: rig.receiver.url(path), events, rate_limit_per_second: rate },
  });
  if (res.status !== 201) throw new Error(`subscribe answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function emitScorecards(rig: WebhookRig, tenantId: string, count: number): Promise<void> {
  await rig.server.services.db.transaction(async (trx) => {
    for (let i = 0; i < count; i++)
      await emitEvent(trx, tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() });
  });
}

/**
 * Checks a subscription's pace against `rate`: its attempts (as recorded) started at least 1/rate apart,
 * and the receiver never had more than `rate` + 1 in any second (a request whose start was late by set-up or
 * scheduling can come close to the next one; a burst sent together would put them all in one second).
 */
async function checkPaced(
  t: Test,
  rig: WebhookRig,
  subscriptionId: string,
  arrivals: readonly ReceivedRequest[],
  rate: number,
  stalled: () => number,
): Promise<void> {
  const starts = (await attemptStarts(rig, subscriptionId)).sort((a, b) => a - b);
  const gaps = starts.slice(1).map((time, i) => time - (starts[i] ?? 0));
  t.comment(`gaps between attempt starts (ms): ${gaps.map(Math.round).join(", ")}`);
  // Never below a quarter of the interval, which attempts sent together come nowhere near.
  const stallMs = Math.round(stalled());
  const bound = Math.max(1000 / rate - TOLERANCE_MS - stallMs, 1000 / rate / 4);
  const smallest = Math.min(...gaps);
  t.ok(
    smallest >= bound,
    `consecutive attempts started at least ${bound} ms apart (${1000 / rate} ms less ${TOLERANCE_MS} ms and the event loop's longest stall, ${stallMs} ms, but at least a quarter of it; smallest ${Math.round(smallest)} ms)`,
  );
  const times = arrivals.map((request) => request.receivedAt).sort((a, b) => a - b);
  const mostInSecond = Math.max(
    ...times.map((start) => times.filter((time) => time >= start && time < start + 1000).length),
  );
  t.ok(mostInSecond <= rate + 1, `at most ${rate + 1} arrivals in any second (${mostInSecond})`);
}

t.test(
  "a limited endpoint (2/s) given a burst of 12 events receives them at its rate; each delivered at its first attempt, none failed; a delivery that waits shows when it is due; the same events' deliveries to an unlimited endpoint are not held back",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false, env: { WORKER_CONCURRENCY: "2" } });
    const subscriptionId = await subscribeLimited(rig, rig.tenant, "/limited", ["*"], 2);
    // Each event goes to both: one deliver_webhooks job per event, whose limited delivery is paced alone.
    await subscribeLimited(rig, rig.tenant, "/unlimited", ["*"], null);
    await emitScorecards(rig, rig.tenant.tenantId, 12);
    const stalled = loopStalls(t);
    const worker = await startWorker(rig.server.services, rig.server.databaseUrl);
    t.teardown(() => worker.stop());

    // While the burst drains, the deliveries still waiting say when each is due, with no attempt spent.
    const waiting = await waitFor(
      async () =>
        (await rig.deliveries()).filter(
          (delivery) =>
            delivery.status === "pending" &&
            delivery.attempts === 0 &&
            delivery.next_attempt_at !== null &&
            Date.parse(delivery.next_attempt_at) - Date.parse(delivery.created_at) >= 2000,
        ),
      (found) => found.length > 0,
      { seconds: 10 },
    );
    t.ok(waiting.length > 0, `deliveries held back show a next_attempt_at seconds ahead (${waiting.length})`);

    const arrivals = await waitFor(
      async () => rig.receiver.receivedAt("/limited"),
      (received) => received.length >= 12,
      { seconds: 30 },
    );
    t.equal(arrivals.length, 12, "all 12 arrived");
    const unlimited = rig.receiver.receivedAt("/unlimited");
    t.equal(unlimited.length, 12, "the unlimited endpoint received the 12 too");
    const limitedTimes = arrivals.map((request) => request.receivedAt).sort((x, y) => x - y);
    const unlimitedLast = Math.max(...unlimited.map((request) => request.receivedAt));
    t.ok(
      unlimitedLast < (limitedTimes[2] ?? 0),
      "the unlimited endpoint had all 12 before the limited one had its third",
    );
    await checkPaced(t, rig, subscriptionId, arrivals, 2, stalled);
    const first = Math.min(...arrivals.map((a) => a.receivedAt));
    const last = Math.max(...arrivals.map((a) => a.receivedAt));
    // The receiver stamps an arrival on this process's event loop, so a stall of it can move the first one later.
    const spreadBound = 5500 - TOLERANCE_MS - Math.round(stalled());
    t.ok(
      last - first >= spreadBound,
      `spread over ${Math.round(last - first)} ms, at least ${spreadBound} ms (11 gaps of 500 ms less ${TOLERANCE_MS} ms and the event loop's longest stall)`,
    );

    t.equal(await rig.jobsDrained(10), 0, "no job left: pacing never failed a job");
    const deliveries = (await rig.deliveries()).filter((delivery) => delivery.subscription_id === subscriptionId);
    t.equal(deliveries.length, 12);
    t.same(
      deliveries.map((delivery) => [delivery.status, delivery.attempts]),
      Array.from({ length: 12 }, () => ["delivered", 1]),
      "every one delivered at its first attempt: waiting spent none",
    );
    const subscription = await rig.subscription(subscriptionId);
    t.equal(subscription.status, "active");
    t.equal(subscription.rate_limit_per_second, 2);
  },
);

t.test(
  "an attempt is let go no sooner than 1/rate after the one before: the slot pace_delivery gives is exactly that far after it",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false });
    const { db } = rig.server.services;
    for (const rate of [1, 10, 1000]) {
      const subscriptionId = await subscribeLimited(rig, rig.tenant, `/exact-${rate}`, ["*"], rate);
      await emitScorecards(rig, rig.tenant.tenantId, 1);
      const delivery = (await rig.deliveries()).find((candidate) => candidate.subscription_id === subscriptionId);
      if (!delivery) throw new Error("the event made no delivery");
      // The attempt before was let go an hour from now, so this one must wait for it whenever it runs.
      const [pacing] = await db("integrator.webhook_send_pacing")
        .insert({
          tenant_id: rig.tenant.tenantId,
          subscription_id: subscriptionId,
          last_sent_at: db.raw("now() + interval '1 hour'"),
        })
        .returning<{ generation: number; last_sent_at: Date }[]>(["generation", "last_sent_at"]);
      if (!pacing) throw new Error("no pacing row");
      const { rows } = await db.raw<{ rows: { seconds: number | null }[] }>(
        "select integrator.pace_delivery(?, ?, ?, 0, ?, ?) as seconds",
        [rig.tenant.tenantId, subscriptionId, delivery.id, rate, pacing.generation],
      );
      t.ok((rows[0]?.seconds ?? 0) > 3599, `${rate}/s: held back (${rows[0]?.seconds} s)`);
      const due = await db("integrator.webhook_deliveries")
        .where({ tenant_id: rig.tenant.tenantId, id: delivery.id })
        .first<{ next_attempt_at: Date }>("next_attempt_at");
      t.equal(
        (due?.next_attempt_at.getTime() ?? 0) - pacing.last_sent_at.getTime(),
        1000 / rate,
        `${rate}/s: its slot is ${1000 / rate} ms after the attempt before, not a moment sooner`,
      );
    }
  },
);

t.test(
  "retries count toward the rate: each of 4 deliveries failing once reaches a 2/s endpoint at its rate",
  async (t) => {
    const failedOnce = new Set<string>();
    const rig = await startWebhookRig(t, ca, {
      worker: false,
      answer: (request) => {
        const delivery = String(request.headers["x-service-review-delivery"]);
        if (failedOnce.has(delivery)) return { status: 204 };
        failedOnce.add(delivery);
        return { status: 503 };
      },
    });
    const subscriptionId = await subscribeLimited(rig, rig.tenant, "/flaky", ["*"], 2);
    await emitScorecards(rig, rig.tenant.tenantId, 4);
    const stalled = loopStalls(t);
    const worker = await startWorker(rig.server.services, rig.server.databaseUrl);
    t.teardown(() => worker.stop());
    const arrivals = await waitFor(
      async () => rig.receiver.receivedAt("/flaky"),
      (received) => received.length >= 8,
      { seconds: 30 },
    );
    t.equal(arrivals.length, 8, "4 first attempts and 4 retries");
    await checkPaced(t, rig, subscriptionId, arrivals, 2, stalled);
    t.equal(await rig.jobsDrained(10), 0);
    const deliveries = (await rig.deliveries()).filter((delivery) => delivery.subscription_id === subscriptionId);
    t.same(
      deliveries.map((delivery) => [delivery.status, delivery.attempts]),
      Array.from({ length: 4 }, () => ["delivered", 2]),
      "each delivered at its second attempt: the failed one and the retry, nothing for waiting",
    );
  },
);

t.test(
  "while a limited endpoint's backlog drains (1/s, 20 events) in a worker of one slot and the spare, another endpoint of the same tenant and another tenant's delivery each start within 2 s",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false, env: { WORKER_CONCURRENCY: "1" } });
    const slowId = await subscribeLimited(rig, rig.tenant, "/slow", ["scorecard.created"], 1);
    await subscribeLimited(rig, rig.tenant, "/same-tenant", ["intake.submitted"], null);
    const tenantB = await createTestTenant(rig.server.services, ["client_admin"], "Tenant B");
    await subscribeLimited(rig, tenantB, "/tenant-b", ["*"], null);
    await emitScorecards(rig, rig.tenant.tenantId, 20);
    const stalled = loopStalls(t);
    const worker = await startWorker(rig.server.services, rig.server.databaseUrl);
    t.teardown(() => worker.stop());

    // The backlog is draining: its first attempts have arrived, most are held back.
    await waitFor(
      async () => rig.receiver.receivedAt("/slow").length,
      (count) => count >= 3,
      { seconds: 20 },
    );
    const emittedAt = performance.now();
    await rig.emitIntake();
    await emitEvent(rig.server.services.db, tenantB.tenantId, "scorecard.created", {
      scorecard_id: crypto.randomUUID(),
    });
    for (const path of ["/same-tenant", "/tenant-b"]) {
      const [arrived] = await waitFor(
        async () => rig.receiver.receivedAt(path),
        (received) => received.length > 0,
        { seconds: 10 },
      );
      const waitedMs = arrived ? arrived.receivedAt - emittedAt : Infinity;
      t.ok(waitedMs < 2000, `${path} started ${Math.round(waitedMs)} ms after its event (< 2000 ms)`);
    }
    const slow = rig.receiver.receivedAt("/slow");
    t.ok(slow.length < 20, `the limited backlog was still draining (${slow.length} of 20 arrived)`);

    // And it kept its rate meanwhile.
    const more = await waitFor(
      async () => rig.receiver.receivedAt("/slow"),
      (received) => received.length >= slow.length + 2,
      { seconds: 10 },
    );
    await checkPaced(t, rig, slowId, more, 1, stalled);
  },
);

t.test(
  "a change of the limit applies to the deliveries already waiting: removing it sends the rest of a 1/s backlog at once, nothing failed",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false });
    const subscriptionId = await subscribeLimited(rig, rig.tenant, "/released", ["*"], 1);
    await emitScorecards(rig, rig.tenant.tenantId, 12);
    const worker = await startWorker(rig.server.services, rig.server.databaseUrl);
    t.teardown(() => worker.stop());
    await waitFor(
      async () => rig.receiver.receivedAt("/released").length,
      (count) => count >= 2,
      { seconds: 20 },
    );
    const cleared = await rig.server.request(`/v1/webhooks/subscriptions/${subscriptionId}`, {
      method: "PATCH",
      token: rig.tenant.token,
      json: { rate_limit_per_second: null },
    });
    t.equal(cleared.status, 200);
    const clearedAt = performance.now();
    const all = await waitFor(
      async () => rig.receiver.receivedAt("/released"),
      (received) => received.length >= 12,
      { seconds: 20 },
    );
    t.equal(all.length, 12, "all arrived");
    const lastMs = Math.max(...all.map((request) => request.receivedAt)) - clearedAt;
    // At 1/s the ~10 still waiting would have taken about 10 s more.
    t.ok(lastMs < 3000, `the last arrived ${Math.round(lastMs)} ms after the limit was removed (< 3000 ms)`);
    t.equal(await rig.jobsDrained(10), 0);
    const deliveries = (await rig.deliveries()).filter((delivery) => delivery.subscription_id === subscriptionId);
    t.same(
      deliveries.map((delivery) => [delivery.status, delivery.attempts]),
      Array.from({ length: 12 }, () => ["delivered", 1]),
    );
  },
);

t.test(
  "two workers on one database share the limit: a 2/s endpoint given 10 events still receives them at its rate",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false });
    const subscriptionId = await subscribeLimited(rig, rig.tenant, "/shared", ["*"], 2);
    await emitScorecards(rig, rig.tenant.tenantId, 10);
    const stalled = loopStalls(t);
    const workers = await Promise.all([
      startWorker(rig.server.services, rig.server.databaseUrl),
      startWorker(rig.server.services, rig.server.databaseUrl),
    ]);
    t.teardown(() => Promise.all(workers.map((worker) => worker.stop())));
    const arrivals = await waitFor(
      async () => rig.receiver.receivedAt("/shared"),
      (received) => received.length >= 10,
      { seconds: 30 },
    );
    t.equal(arrivals.length, 10, "all 10 arrived");
    await checkPaced(t, rig, subscriptionId, arrivals, 2, stalled);
    const deliveries = (await rig.deliveries()).filter((delivery) => delivery.subscription_id === subscriptionId);
    t.same(
      deliveries.map((delivery) => [delivery.status, delivery.attempts]),
      Array.from({ length: 10 }, () => ["delivered", 1]),
    );
  },
);
