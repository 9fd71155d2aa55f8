// Delivery connections are kept alive per checked target: a second attempt to the same
// host and the same checked address reuses the connection, a burst of attempts finds all the connections
// the burst before it opened, and a pooled connection is never reused for an address the attempt's own
// check did not produce (the send-time SSRF rule, docs/decisions.md §5).
import t, { type Test } from "tap";
import { ConnectionPools, sendWebhook, type SendSettings } from "../../worker/sender.ts";
import { RECEIVER_HOST, startReceiver } from "../helpers/https-receiver.ts";
import { testCa } from "../helpers/webhooks.ts";
import tls from "node:tls";
import fs from "node:fs";

const ca = testCa(t);

async function rig(t: Test, options: { answerAfterMs?: number; socketsPerTarget?: number } = {}) {
  const receiver = await startReceiver(ca, () => ({ status: 204, delayMs: options.answerAfterMs ?? 0 }), {
    keepAliveTimeoutMs: 30_000,
  });
  t.teardown(() => receiver.close());
  let connections = 0;
  receiver.onConnection(() => connections++);
  const pools = new ConnectionPools(options.socketsPerTarget);
  t.teardown(() => pools.destroy());
  const settings = (address: string): SendSettings => ({
    timeoutMs: 5000,
    allowPrivateTargets: true,
    allowedPorts: [[1, 65535]],
    resolve: { [RECEIVER_HOST]: address },
    secureContext: tls.createSecureContext({ ca: [...tls.rootCertificates, fs.readFileSync(ca.caFile, "utf8")] }),
    pools,
  });
  const send = (address: string) =>
    sendWebhook(
      { url: receiver.url("/hook"), body: "{}", headers: { "Content-Type": "application/json" } },
      settings(address),
    );
  return { receiver, send, connections: () => connections };
}

t.test("a second delivery to the same checked address reuses the kept-alive connection", async (t) => {
  const { send, connections, receiver } = await rig(t);
  t.match(await send("127.0.0.1"), { delivered: true, responseCode: 204 });
  t.match(await send("127.0.0.1"), { delivered: true, responseCode: 204 });
  t.equal(receiver.received.length, 2, "both requests arrived");
  t.equal(connections(), 1, "over one connection");
});

t.test("a burst of sends to one host finds every connection the burst before it opened", async (t) => {
  // More at once than the pool's default of 20, as a worker sends an event's deliveries (WORKER_MAX_SENDS).
  const burst = 25;
  // Every answer comes after all of a burst's requests were sent, so each request needs a connection of its own.
  const { send, connections, receiver } = await rig(t, { answerAfterMs: 1500, socketsPerTarget: burst });
  const sendBurst = () => Promise.all(Array.from({ length: burst }, () => send("127.0.0.1")));
  for (const outcome of await sendBurst()) t.match(outcome, { delivered: true, responseCode: 204 });
  t.equal(connections(), burst, "the first burst opens a connection for each request");
  for (const outcome of await sendBurst()) t.match(outcome, { delivered: true, responseCode: 204 });
  t.equal(receiver.received.length, 2 * burst);
  t.equal(connections(), burst, "the second burst opens none: the pool kept them all");
});

t.test(
  "a pooled connection is not reused when the host's fresh resolution gives another address: the attempt connects to the new, checked address",
  async (t) => {
    const { send, connections, receiver } = await rig(t);
    t.match(await send("127.0.0.1"), { delivered: true, responseCode: 204 });
    // The receiver listens on 127.0.0.1 only: reusing the open connection would deliver, a connection
    // to the newly resolved address is refused.
    const outcome = await send("127.0.0.2");
    t.match(outcome, { delivered: false, errorMessage: "Connection failed" });
    t.equal(receiver.received.length, 1, "the second request did not travel over the first connection");
    t.equal(connections(), 1);
  },
);
