// worker/sender.ts against a real HTTPS receiver on loopback: the worker's long-lived abort signal is
// lent to every attempt and must come back clean, whatever the attempt's outcome.
import { getEventListeners } from "node:events";
import fs from "node:fs";
import tls from "node:tls";
import t from "tap";
import { sendWebhook, type SendSettings } from "../../worker/sender.ts";
import { RECEIVER_HOST, startReceiver } from "../helpers/https-receiver.ts";
import { testCa } from "../helpers/webhooks.ts";

const ca = testCa(t);

function settings(timeoutMs: number): SendSettings {
  return {
    timeoutMs,
    allowPrivateTargets: true,
    allowedPorts: [[1, 65535]],
    resolve: { [RECEIVER_HOST]: "127.0.0.1" },
    secureContext: tls.createSecureContext({ ca: [...tls.rootCertificates, fs.readFileSync(ca.caFile, "utf8")] }),
  };
}

t.test(
  "the sender leaves no listener on the worker's abort signal after an attempt (delivered, failed or timed out)",
  async (t) => {
    const receiver = await startReceiver(ca, (request) =>
      request.path.startsWith("/stall")
        ? "stall"
        : request.path.startsWith("/fail")
          ? { status: 500 }
          : { status: 204 },
    );
    t.teardown(() => receiver.close());
    const shutdown = new AbortController();
    const request = (path: string) => ({ url: receiver.url(path), body: "{}", headers: {} });
    for (let i = 0; i < 50; i++) {
      const outcome = await sendWebhook(request(`/ok-${i}`), settings(5000), shutdown.signal);
      if (!outcome.delivered) t.fail(`attempt ${i} failed: ${outcome.detail}`);
    }
    t.equal(getEventListeners(shutdown.signal, "abort").length, 0, "none after 50 delivered attempts");
    for (let i = 0; i < 10; i++) await sendWebhook(request(`/fail-${i}`), settings(5000), shutdown.signal);
    t.equal(getEventListeners(shutdown.signal, "abort").length, 0, "none after 10 failed attempts");
    const timedOut = await sendWebhook(request("/stall"), settings(300), shutdown.signal);
    t.match(timedOut, { delivered: false, errorClass: "timeout", errorMessage: "Timeout" });
    t.equal(getEventListeners(shutdown.signal, "abort").length, 0, "none after a timed-out attempt");
    const refused = await sendWebhook(
      { url: `https://${RECEIVER_HOST}:1/x`, body: "{}", headers: {} },
      settings(2000),
      shutdown.signal,
    );
    t.match(refused, { delivered: false, errorClass: "connection_failed", errorMessage: "Connection failed" });
    t.equal(getEventListeners(shutdown.signal, "abort").length, 0, "none after a refused connection");
  },
);

t.test("the worker's abort signal still cuts an attempt in flight short", async (t) => {
  const receiver = await startReceiver(ca, () => "stall");
  t.teardown(() => receiver.close());
  const shutdown = new AbortController();
  const attempt = sendWebhook(
    { url: receiver.url("/stall"), body: "{}", headers: {} },
    settings(10_000),
    shutdown.signal,
  );
  await new Promise<void>((resolve) => {
    const check = () => (receiver.received.length > 0 ? resolve() : setTimeout(check, 20));
    check();
  });
  t.equal(getEventListeners(shutdown.signal, "abort").length, 1, "one listener while the attempt runs");
  const started = performance.now();
  shutdown.abort();
  t.match(await attempt, {
    delivered: false,
    errorClass: "connection_failed",
    errorMessage: "Interrupted: the worker stopped",
  });
  t.ok(performance.now() - started < 2000, "ended at once, not at the timeout");
  const after = await sendWebhook(
    { url: receiver.url("/late"), body: "{}", headers: {} },
    settings(5000),
    shutdown.signal,
  );
  t.match(
    after,
    { delivered: false, errorMessage: "Interrupted: the worker stopped" },
    "an attempt after shutdown does not start",
  );
});
