// Delivery failure modes that need settings of their own (docs/decisions.md §5): the timeout, the send-time
// SSRF check when private targets are not allowed, an untrusted certificate, the retry schedule and
// the attempt bookkeeping after every attempt.
import net from "node:net";
import t from "tap";
import { RECEIVER_HOST } from "../helpers/https-receiver.ts";
import { retryDelaySeconds } from "../../worker/tasks/deliver_webhook.ts";
import { loadConfig } from "../../foundation/config.ts";
import { jobsOfDelivery, startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { startWorker } from "../../worker/runner.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);

t.test("a receiver that does not answer within WEBHOOK_TIMEOUT_MS is a failed attempt", async (t) => {
  const rig = await startWebhookRig(t, ca, {
    // Long enough for the TLS handshake on a busy machine: the receiver, not the handshake, must be what stalls.
    env: { WEBHOOK_TIMEOUT_MS: "1500", MAX_DELIVERY_ATTEMPTS: "2" },
    answer: () => "stall",
  });
  const { id } = await rig.subscribe(rig.receiver.url("/stall"));
  await rig.emitIntake();
  const delivery = await rig.finalDelivery(id);
  t.match(delivery, { status: "failed", attempts: 2, response_code: null, error_message: "Timeout" });
  t.equal(rig.receiver.receivedAt("/stall").length, 2, "each attempt reached the receiver, which never answered");
});

t.test(
  "a host that resolves to a private address is refused when private targets are not allowed, and no connection is made",
  async (t) => {
    let connections = 0;
    const rig = await startWebhookRig(t, ca, { env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "false" } });
    rig.receiver.onConnection(() => connections++);
    const { id } = await rig.subscribe(rig.receiver.url("/private"));
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    t.match(delivery, { status: "failed", attempts: 3, response_code: null });
    t.equal(delivery?.error_message, "Target not allowed", "a coarse class: no address, no host");
    t.notMatch(delivery?.error_message, /127\.0\.0\.1/, "the address itself is not disclosed");
    t.equal(rig.receiver.received.length, 0, "the receiver saw no request");
    t.equal(connections, 0, "not even a connection");
  },
);

t.test(
  "a certificate that no trusted CA vouches for is a failed attempt (without WEBHOOK_CA_FILE the test CA is not trusted)",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { env: { WEBHOOK_CA_FILE: "", MAX_DELIVERY_ATTEMPTS: "1" } });
    const { id } = await rig.subscribe(rig.receiver.url("/untrusted"));
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    t.match(delivery, {
      status: "failed",
      attempts: 1,
      response_code: null,
      error_message: "TLS failed",
    });
    t.equal(rig.receiver.received.length, 0, "no request was sent over the untrusted connection");
  },
);

t.test(
  "a target whose port is not in WEBHOOK_ALLOWED_PORTS is refused at send time too (a row written around the API), and no connection is made",
  async (t) => {
    let connections = 0;
    const rig = await startWebhookRig(t, ca, { worker: false, env: { MAX_DELIVERY_ATTEMPTS: "1" } });
    rig.receiver.onConnection(() => connections++);
    const { id } = await rig.subscribe(rig.receiver.url("/port"));
    // A worker whose WEBHOOK_ALLOWED_PORTS is the default (443 only), as after the setting was narrowed.
    const { services } = rig.server;
    const worker = await startWorker(
      {
        ...services,
        config: { ...services.config, webhooks: { ...services.config.webhooks, allowedPorts: [[443, 443]] } },
      },
      rig.server.databaseUrl,
      { pollInterval: 200 },
    );
    t.teardown(() => worker.stop());
    await rig.emitIntake();
    t.match(await rig.finalDelivery(id), {
      status: "failed",
      attempts: 1,
      response_code: null,
      error_message: "Target not allowed",
    });
    t.equal(connections, 0, "no connection to the refused port");
  },
);

t.test(
  "tenants see a coarse failure class; the detail (error code, address) is only in the service's log",
  async (t) => {
    const text: string[] = [];
    const rig = await startWebhookRig(t, ca, {
      env: { MAX_DELIVERY_ATTEMPTS: "1" },
      logDestination: { write: (line: string) => void text.push(line) },
    });
    const closed = await new Promise<number>((resolve) => {
      const probe = net.createServer();
      probe.listen(0, "127.0.0.1", () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
      });
    });
    const { id } = await rig.subscribe(`https://${RECEIVER_HOST}:${closed}/closed`);
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    t.match(delivery, { status: "failed", error_message: "Connection failed", response_code: null });
    t.notMatch(delivery?.error_message, /ECONNREFUSED|127\.0\.0\.1|refused/i, "no code, address or port state");
    const lines = await waitFor(
      async () =>
        text
          .join("")
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { msg?: string; delivery_id?: string; failure?: string; detail?: string })
          .filter((line) => line.msg === "webhook attempt failed" && line.delivery_id === delivery?.id),
      (found) => found.length > 0,
    );
    t.match(lines[0], { failure: "Connection failed", detail: /ECONNREFUSED/ }, "the log keeps the detail");
  },
);

t.test(
  "by default retry n waits 5 minutes, 2 hours, 8 hours, then 10 hours each: with 3 attempts the last comes 2 h 5 min after the first",
  async (t) => {
    const waits = loadConfig({}).webhooks.retryWaitsSeconds;
    t.same(
      [1, 2, 3, 4, 5, 24].map((n) => retryDelaySeconds(n, waits)),
      [300, 7200, 28800, 36000, 36000, 36000],
    );
    const { maxAttempts } = loadConfig({}).webhooks;
    t.equal(maxAttempts, 3, "3 attempts unless MAX_DELIVERY_ATTEMPTS says otherwise");
    const spread = Array.from({ length: maxAttempts - 1 }, (_, index) => retryDelaySeconds(index + 1, waits));
    t.equal(
      spread.reduce((sum, wait) => sum + wait, 0),
      2 * 3600 + 5 * 60,
    );
    const custom = loadConfig({ WEBHOOK_RETRY_SCHEDULE: "30s, 10m,1h,1d" }).webhooks.retryWaitsSeconds;
    t.same(
      [1, 2, 3, 4, 5].map((n) => retryDelaySeconds(n, custom)),
      [30, 600, 3600, 86400, 86400],
      "WEBHOOK_RETRY_SCHEDULE: its waits in order, the last repeated",
    );
  },
);

t.test("WEBHOOK_RETRY_BASE_SECONDS instead: retry n waits base × 6^(n−1) seconds, at most 10 hours", async (t) => {
  const waits = loadConfig({ WEBHOOK_RETRY_BASE_SECONDS: "10" }).webhooks.retryWaitsSeconds;
  t.same(
    [1, 2, 3, 4, 5, 6, 24].map((n) => retryDelaySeconds(n, waits)),
    [10, 60, 360, 2160, 12960, 36000, 36000],
  );
  t.same(loadConfig({ WEBHOOK_RETRY_BASE_SECONDS: "0" }).webhooks.retryWaitsSeconds.slice(0, 3), [0, 0, 0]);
});

t.test(
  "after every attempt the delivery records attempts, last_attempt_at, response_code and error_message, stays pending, and its next attempt is queued for the schedule's wait later, which next_attempt_at shows",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      env: { WEBHOOK_RETRY_SCHEDULE: "1h" },
      answer: () => ({ status: 500 }),
    });
    const { id } = await rig.subscribe(rig.receiver.url("/later"));
    const before = Date.now();
    await rig.emitIntake();
    const delivery = await waitFor(
      async () => (await rig.deliveries()).find((row) => row.subscription_id === id),
      (row) => row !== undefined && row.attempts === 1,
    );
    t.match(delivery, { status: "pending", attempts: 1, response_code: 500, error_message: "HTTP status 500" });
    const attemptedAt = Date.parse(delivery?.last_attempt_at ?? "");
    t.ok(attemptedAt >= before - 1000 && attemptedAt <= Date.now(), "last_attempt_at is the attempt's time");
    const deliveryId = delivery?.id ?? "";
    // The first attempt's job completes; the retry's is the one job left.
    const onlyRetry = (jobs: Awaited<ReturnType<typeof jobsOfDelivery>>) =>
      jobs.length === 1 && jobs[0]?.locked_at === null;
    const [job] = await waitFor(() => jobsOfDelivery(rig.server.services.db, deliveryId), onlyRetry);
    const delaySeconds = (new Date(job?.run_at ?? 0).getTime() - attemptedAt) / 1000;
    t.ok(
      delaySeconds > 3590 && delaySeconds < 3610,
      `the retry is queued an hour after the attempt (${delaySeconds} s)`,
    );
    t.equal(
      delivery?.next_attempt_at,
      new Date(job?.run_at ?? 0).toISOString(),
      "next_attempt_at is when the retry's job runs",
    );
    const detail = await rig.server.request(`/v1/webhooks/deliveries/${deliveryId}`, { token: rig.tenant.token });
    t.equal(
      ((await detail.json()) as { delivery: { next_attempt_at: string } }).delivery.next_attempt_at,
      delivery?.next_attempt_at,
      "getWebhookDelivery shows it too",
    );
    t.equal(job?.attempts, 0, "a fresh job, not graphile-worker's own retry of the first");
    t.match(job?.payload, { delivery_id: deliveryId, attempts: 1 }, "for the delivery's second attempt");
    t.equal(rig.receiver.received.length, 1, "one attempt so far");

    // What a worker killed after recording the attempt, before completing its job, leaves behind: the
    // first attempt's job, released to run again. It finds the attempt recorded and does nothing.
    await rig.server.services.db.raw("select graphile_worker.add_job('deliver_webhook', ?::json)", [
      JSON.stringify({ tenant_id: rig.tenant.tenantId, delivery_id: deliveryId, attempts: 0 }),
    ]);
    const [left] = await waitFor(() => jobsOfDelivery(rig.server.services.db, deliveryId), onlyRetry);
    t.equal(left?.id, job?.id, "the leftover job ran and completed; the retry still waits");
    t.equal(rig.receiver.received.length, 1, "not sent again beside the scheduled retry");
    t.match(
      (await rig.deliveries()).find((row) => row.id === deliveryId),
      { status: "pending", attempts: 1 },
      "the delivery is as the attempt left it",
    );
  },
);
