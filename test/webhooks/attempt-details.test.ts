// Attempt details, with a real graphile-worker and a real HTTPS receiver: each attempt
// in getWebhookDelivery shows the headers of the request sent (signatures and webhook-id, never the
// secret), the answer's status, headers and first 4 KiB of body (longer bodies cut at a character
// boundary and marked truncated; headers kept to 4 KiB), and a sentence beside its failure class; an answer
// whose body does not end in time, or whose header holds a control character, still counts by its status.
import net from "node:net";
import t from "tap";
import type { components } from "../../generated/openapi.ts";
import type { DeliveryView } from "../../db/webhooks/views.ts";
import { RECEIVER_HOST, type Answer, type ReceivedRequest } from "../helpers/https-receiver.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";

type Attempt = components["schemas"]["WebhookDeliveryAttempt"];

const ca = testCa(t);
let rig: WebhookRig;

const REFUSAL = JSON.stringify({ error: "unknown scorecard kind", hint: "upgrade the receiver" });

// What the receiver answers, by path.
function answer(request: ReceivedRequest, count: number): Answer {
  const path = request.path.split("?")[0] ?? "";
  if (path.startsWith("/refuse-once"))
    return count === 1
      ? {
          status: 500,
          headers: { "Content-Type": "application/json; charset=utf-8", "X-Receiver": "v1" },
          body: REFUSAL,
        }
      : { status: 204 };
  if (path.startsWith("/long")) return { status: 200, body: `${"x".repeat(4095)}é${"y".repeat(6000)}` };
  if (path.startsWith("/exactly-4k")) return { status: 200, body: "z".repeat(4096) };
  if (path.startsWith("/nul")) return { status: 200, body: Buffer.from([0x6f, 0x6b, 0x00, 0xff, 0x21]) };
  if (path.startsWith("/redirect")) return { status: 301, headers: { Location: "https://elsewhere.example.com/" } };
  if (path.startsWith("/control-header"))
    return { raw: "HTTP/1.1 200 OK\r\nX-Trace: a\u0001b\r\nContent-Length: 2\r\n\r\nok" };
  if (path.startsWith("/many-headers"))
    return {
      status: 200,
      headers: Object.fromEntries(Array.from({ length: 28 }, (_, index) => [`X-Filler-${index}`, "v".repeat(500)])),
    };
  return { status: 204 };
}

t.before(async () => {
  rig = await startWebhookRig(t, ca, { answer });
});

async function attemptsOf(who: WebhookRig, deliveryId: string): Promise<Attempt[]> {
  const res = await who.server.request(`/v1/webhooks/deliveries/${deliveryId}`, { token: who.tenant.token });
  if (res.status !== 200) throw new Error(`getWebhookDelivery answered ${res.status}`);
  return ((await res.json()) as { attempts: Attempt[] }).attempts;
}

/** Subscribes a path, emits an event and waits for its delivery to be final. */
async function finalDeliveryAt(who: WebhookRig, path: string): Promise<DeliveryView> {
  const { id } = await who.subscribe(who.receiver.url(path), ["intake.submitted"]);
  await who.emitIntake();
  const delivery = await who.finalDelivery(id);
  if (!delivery) throw new Error(`no final delivery at ${path}`);
  await who.server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: who.tenant.token });
  return delivery;
}

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

t.test(
  "an attempt shows the request headers as the receiver got them, signatures and webhook-id included, never the secret",
  async (t) => {
    const path = `/refuse-once-${crypto.randomUUID()}`;
    const { id, secret } = await rig.subscribe(rig.receiver.url(path), ["intake.submitted"]);
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    if (!delivery) return t.fail("no delivery");
    t.match(delivery, { status: "delivered", attempts: 2 });
    const attempts = await attemptsOf(rig, delivery.id);
    const received = rig.receiver.receivedAt(path);
    t.equal(received.length, 2);
    for (const [index, attempt] of attempts.entries()) {
      const got = received[index]?.headers ?? {};
      const sent = attempt.request_headers ?? {};
      t.same(
        Object.keys(sent)
          .map((name) => name.toLowerCase())
          .sort(),
        [
          "content-length",
          "content-type",
          "user-agent",
          "webhook-id",
          "webhook-signature",
          "webhook-timestamp",
          "x-service-review-delivery",
          "x-service-review-event",
          "x-service-review-signature",
        ],
        `attempt ${attempt.number}: the documented headers`,
      );
      for (const [name, value] of Object.entries(sent))
        t.equal(got[name.toLowerCase()], value, `attempt ${attempt.number}: ${name} as the receiver got it`);
      t.equal(sent["webhook-id"], delivery.event_id);
      t.equal(sent["X-Service-Review-Delivery"], delivery.id);
    }
    const shown = JSON.stringify(attempts);
    t.notOk(shown.includes(secret), "the secret is nowhere");
    t.notOk(shown.includes(secret.slice("whsec_".length)), "nor its key");
    await rig.server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: rig.tenant.token });
  },
);

t.test(
  "a refusal shows the answer's status, headers and body, and a sentence beside http_status; the delivered retry shows its own",
  async (t) => {
    const delivery = await finalDeliveryAt(rig, `/refuse-once-${crypto.randomUUID()}`);
    const [refused, accepted] = await attemptsOf(rig, delivery.id);
    t.match(refused, {
      number: 1,
      outcome: "failed",
      response_code: 500,
      error_class: "http_status",
      error_message: "The endpoint answered 500 Internal Server Error; only a 2xx answer counts as delivered.",
      response_body: REFUSAL,
      response_body_truncated: false,
    });
    t.match(refused?.response_headers, {
      "content-type": "application/json; charset=utf-8",
      "x-receiver": "v1",
    });
    t.match(accepted, {
      number: 2,
      outcome: "delivered",
      response_code: 204,
      error_class: null,
      error_message: null,
      response_body: "",
      response_body_truncated: false,
    });
    t.type(accepted?.response_headers?.date, "string", "the answer's headers");
    t.equal(delivery.error_message, null);
  },
);

t.test(
  "a body over 4 KiB is kept to its first 4096 bytes, a character the limit cuts left out, and marked truncated",
  async (t) => {
    const delivery = await finalDeliveryAt(rig, `/long-${crypto.randomUUID()}`);
    t.match(delivery, { status: "delivered", attempts: 1, response_code: 200 });
    const [attempt] = await attemptsOf(rig, delivery.id);
    t.equal(attempt?.response_body_truncated, true, "truncated");
    t.equal(attempt?.response_body, "x".repeat(4095), "the 2-byte é at bytes 4096–4097 is cut, so left out");
    t.ok(Buffer.byteLength(attempt?.response_body ?? "") <= 4096);

    const whole = await finalDeliveryAt(rig, `/exactly-4k-${crypto.randomUUID()}`);
    const [exact] = await attemptsOf(rig, whole.id);
    t.equal(exact?.response_body, "z".repeat(4096), "a body of exactly 4 KiB is kept whole");
    t.equal(exact?.response_body_truncated, false, "and is not truncated");
  },
);

t.test("a body that is not UTF-8 or holds a NUL is kept readable, never refused by the database", async (t) => {
  const delivery = await finalDeliveryAt(rig, `/nul-${crypto.randomUUID()}`);
  t.match(delivery, { status: "delivered", attempts: 1 });
  const [attempt] = await attemptsOf(rig, delivery.id);
  t.equal(attempt?.response_body, "ok\uFFFD\uFFFD!", "NUL and an invalid byte as U+FFFD");
});

t.test("an answer's headers are kept to 4 KiB, the headers left out counted in a marker entry", async (t) => {
  const delivery = await finalDeliveryAt(rig, `/many-headers-${crypto.randomUUID()}`);
  t.match(delivery, { status: "delivered", attempts: 1, response_code: 200 });
  const [attempt] = await attemptsOf(rig, delivery.id);
  const headers = attempt?.response_headers ?? {};
  const { "(left out)": leftOut, ...kept } = headers;
  const bytes = Object.entries(kept).reduce((sum, [name, value]) => sum + Buffer.byteLength(name + value), 0);
  t.ok(bytes <= 4096, `the headers kept hold ${bytes} bytes of the answer's 14 KB`);
  t.match(leftOut, /^\d+ headers not kept: the answer's headers passed 4096 bytes$/, "and say some were left out");
  t.equal(kept["x-filler-0"], "v".repeat(500), "the first are kept whole");
});

t.test(
  "a 200 with a control character in a header is delivered, the character shown escaped and the body not read",
  async (t) => {
    const delivery = await finalDeliveryAt(rig, `/control-header-${crypto.randomUUID()}`);
    t.match(delivery, { status: "delivered", attempts: 1, response_code: 200, error_message: null });
    const [attempt] = await attemptsOf(rig, delivery.id);
    t.match(attempt, {
      outcome: "delivered",
      response_code: 200,
      error_class: null,
      error_message: null,
      response_headers: { "x-trace": "a\\u0001b", "content-length": "2" },
      response_body: "",
      response_body_truncated: true,
    });
  },
);

t.test("a redirect's sentence says it is not followed", async (t) => {
  const delivery = await finalDeliveryAt(rig, `/redirect-${crypto.randomUUID()}`);
  t.match(delivery, { status: "failed", attempts: 3, error_message: "HTTP status 301" });
  const attempts = await attemptsOf(rig, delivery.id);
  for (const attempt of attempts)
    t.match(attempt, {
      error_class: "http_status",
      error_message:
        "The endpoint answered 301 Moved Permanently, a redirect, which is not followed; only a 2xx answer counts as delivered.",
      response_headers: { location: "https://elsewhere.example.com/" },
    });
});

t.test(
  "a refused connection: its sentence, the request headers it would have sent, no answer's headers or body",
  async (t) => {
    const port = await closedPort();
    const { id } = await rig.subscribe(`https://${RECEIVER_HOST}:${port}/closed`, ["intake.submitted"]);
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    if (!delivery) return t.fail("no delivery");
    t.match(delivery, { status: "failed", error_message: "Connection failed" });
    for (const attempt of await attemptsOf(rig, delivery.id)) {
      t.match(attempt, {
        outcome: "failed",
        response_code: null,
        error_class: "connection_failed",
        error_message: "The connection to the endpoint was refused, reset or could not be made.",
        response_headers: null,
        response_body: null,
        response_body_truncated: false,
      });
      t.equal(attempt.request_headers?.["webhook-id"], delivery.event_id);
      t.notMatch(JSON.stringify(attempt), /127\.0\.0\.1|ECONNREFUSED|:\d{4,5}\//, "no address, port or error code");
    }
    await rig.server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: rig.tenant.token });
  },
);

t.test(
  "a timeout says the limit; an answer whose body does not end in time counts by its status, with the body read so far",
  async (t) => {
    // A rig of its own: a short timeout would make the other tests depend on the machine's load.
    const slow = await startWebhookRig(t, ca, {
      env: { WEBHOOK_TIMEOUT_MS: "2000", MAX_DELIVERY_ATTEMPTS: "1" },
      answer: (request) =>
        request.path.startsWith("/stall")
          ? "stall"
          : { status: 200, headers: { "Content-Type": "text/plain" }, body: "partial", bodyNeverEnds: true },
    });
    const stalled = await finalDeliveryAt(slow, `/stall-${crypto.randomUUID()}`);
    t.match(stalled, { status: "failed", error_message: "Timeout" });
    const [timedOut] = await attemptsOf(slow, stalled.id);
    t.match(timedOut, {
      error_class: "timeout",
      error_message: "The endpoint sent no answer within 2 s (the attempt's time limit).",
      response_headers: null,
      response_body: null,
    });

    const unended = await finalDeliveryAt(slow, `/unended-${crypto.randomUUID()}`);
    t.match(unended, { status: "delivered", attempts: 1, response_code: 200 });
    const [attempt] = await attemptsOf(slow, unended.id);
    t.match(attempt, {
      outcome: "delivered",
      error_message: null,
      response_body: "partial",
      response_body_truncated: true,
      response_headers: { "content-type": "text/plain" },
    });
    t.ok((attempt?.duration_ms ?? 0) < 1900, `duration_ms is up to the status line (${attempt?.duration_ms} ms)`);
  },
);
