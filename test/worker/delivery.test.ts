// Sending deliveries (docs/decisions.md §5) with a real graphile-worker to a real HTTPS receiver on loopback:
// the sorted-keys body, the signature and headers, 2xx as delivered, retries with a stable delivery
// id, the final failed status, redirects not followed, refused connections, deactivated
// subscriptions, idempotent jobs, and payloads that match the document and carry no document content.
import dns from "node:dns";
import fs from "node:fs";
import net from "node:net";
import { createHmac, timingSafeEqual } from "node:crypto";
import t from "tap";
import { Webhook } from "standardwebhooks";
import { canonicalJson } from "../../foundation/canonical-json.ts";
import { emitEvent, EVENT_KINDS, type EventKind } from "../../db/events.ts";
import { JOB } from "../../db/jobs.ts";
import { RECEIVER_HOST, type Answer, type ReceivedRequest } from "../helpers/https-receiver.ts";
import { jobsOfDelivery, startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { webhookSchemaErrors } from "../helpers/webhook-schemas.ts";
import type { DeliveryView } from "../../db/webhooks/views.ts";
import { waitFor } from "../helpers/wait.ts";
import { newWebhookSecret } from "../../foundation/signing.ts";

const ca = testCa(t);
let rig: WebhookRig;

// What the receiver answers, by path: the path names the behaviour a test needs.
function answer(request: ReceivedRequest, count: number): Answer {
  const path = request.path.split("?")[0] ?? "";
  if (path.startsWith("/fail-twice")) return count <= 2 ? { status: 500 } : { status: 200 };
  if (path.startsWith("/always-503")) return { status: 503 };
  if (path.startsWith("/redirect")) return { status: 302, headers: { Location: `https://${RECEIVER_HOST}/followed` } };
  if (path.startsWith("/accepted")) return { status: 202 };
  return { status: 200 };
}

t.before(async () => {
  rig = await startWebhookRig(t, ca, { answer });
});

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

t.test("a delivery is one POST with the stored envelope as sorted-keys JSON and the documented headers", async (t) => {
  const path = `/headers-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path), ["intake.submitted"]);
  const data = await rig.emitIntake();
  const delivery = await rig.finalDelivery(id);
  t.match(delivery, {
    status: "delivered",
    attempts: 1,
    response_code: 200,
    error_message: null,
    next_attempt_at: null,
  });
  t.match(delivery?.last_attempt_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  const [request, ...more] = rig.receiver.receivedAt(path);
  t.equal(more.length, 0, "sent once");
  if (!request || !delivery) return;
  t.equal(request.method, "POST");
  t.equal(request.headers["content-type"], "application/json");
  t.equal(request.headers["user-agent"], "integrator-api-webhooks/0.1.0");
  t.equal(request.headers["x-service-review-event"], "intake.submitted");
  t.equal(request.headers["x-service-review-delivery"], delivery.id);
  t.match(request.headers["x-service-review-signature"], /^[0-9a-f]{64}$/);
  const raw = request.rawBody.toString("utf8");
  t.equal(raw, canonicalJson(delivery.payload), "the body is the stored envelope, keys sorted, no whitespace");
  t.equal(raw, canonicalJson(JSON.parse(raw)), "already canonical");
  t.notMatch(raw, /\s/);
  t.same(JSON.parse(raw), {
    id: delivery.event_id,
    event: "intake.submitted",
    tenant_id: rig.tenant.tenantId,
    timestamp: delivery.payload.timestamp,
    data,
  });
});

t.test(
  "the signature is the hex HMAC-SHA256 of the raw body with the subscription's secret, and verifies as a receiver would",
  async (t) => {
    const path = `/signed-${crypto.randomUUID()}`;
    const { id, secret } = await rig.subscribe(rig.receiver.url(path));
    await rig.emitIntake();
    t.equal((await rig.finalDelivery(id))?.status, "delivered");
    const [request] = rig.receiver.receivedAt(path);
    if (!request) return t.fail("nothing received");
    // What the document (WebhookEventEnvelope) tells integrators to do: recompute over the bytes as received,
    // compare in constant time.
    const verify = (key: string) => {
      const expected = createHmac("sha256", key).update(request.rawBody).digest();
      const presented = Buffer.from(String(request.headers["x-service-review-signature"]), "hex");
      return presented.length === expected.length && timingSafeEqual(presented, expected);
    };
    t.ok(verify(secret), "verifies with the secret returned at creation");
    t.notOk(verify(`${secret}x`), "fails with another secret");
    const other = await rig.subscribe(rig.receiver.url(`/other-${crypto.randomUUID()}`));
    t.notOk(verify(other.secret), "each subscription signs with its own secret");
  },
);

t.test(
  "the README's receiver example accepts a real delivery and refuses a tampered body, another id, a stale or future timestamp and missing headers",
  async (t) => {
    const readme = fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const source = /function verifiedEventId\(rawBody, headers, secret[\s\S]*?\n\}/.exec(readme)?.[0];
    if (!source) return t.fail("the README has no verifiedEventId example");
    const verifiedEventId = new Function("createHmac", "timingSafeEqual", `${source}\nreturn verifiedEventId;`)(
      createHmac,
      timingSafeEqual,
    ) as (rawBody: Buffer, headers: Record<string, unknown>, secret: string, nowMs?: number) => string | null;
    const path = `/readme-${crypto.randomUUID()}`;
    const { id, secret } = await rig.subscribe(rig.receiver.url(path));
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    t.equal(delivery?.status, "delivered");
    const [request] = rig.receiver.receivedAt(path);
    if (!request || !delivery) return t.fail("nothing received");
    const headers = request.headers as Record<string, unknown>;
    t.equal(
      verifiedEventId(request.rawBody, headers, secret),
      delivery.event_id,
      "a real delivery verifies: its event's id",
    );
    const tampered = Buffer.from(request.rawBody.toString("utf8").replace("order-4711", "order-4712"));
    t.equal(verifiedEventId(tampered, headers, secret), null, "a changed body does not");
    t.equal(
      verifiedEventId(request.rawBody, { ...headers, "webhook-id": crypto.randomUUID() }, secret),
      null,
      "another id does not (the id is signed, so deduplicating on it is safe)",
    );
    const sentAt = Number(headers["webhook-timestamp"]) * 1000;
    t.equal(
      verifiedEventId(request.rawBody, headers, secret, sentAt + 4 * 60_000),
      delivery.event_id,
      "4 minutes later",
    );
    t.equal(verifiedEventId(request.rawBody, headers, secret, sentAt + 6 * 60_000), null, "a replay 6 minutes later");
    t.equal(verifiedEventId(request.rawBody, headers, secret, sentAt - 6 * 60_000), null, "6 minutes early");
    t.equal(verifiedEventId(request.rawBody, { ...headers, "webhook-signature": undefined }, secret), null);
    t.equal(verifiedEventId(request.rawBody, headers, newWebhookSecret()), null, "another secret");
  },
);

t.test(
  "every attempt carries webhook-id (the event's id, the same on retries), webhook-timestamp and webhook-signature, which the standardwebhooks package verifies; X-Service-Review-Signature is unchanged",
  async (t) => {
    const path = `/fail-twice-standard-${crypto.randomUUID()}`;
    const { id, secret } = await rig.subscribe(rig.receiver.url(path));
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    t.match(delivery, { status: "delivered", attempts: 3 });
    const received = rig.receiver.receivedAt(path);
    t.equal(received.length, 3);
    const verifier = new Webhook(secret); // the secret exactly as returned at creation
    for (const request of received) {
      t.equal(request.headers["webhook-id"], delivery?.event_id, "webhook-id is the event's id");
      t.match(request.headers["webhook-timestamp"], /^\d{10}$/);
      t.ok(
        Math.abs(Number(request.headers["webhook-timestamp"]) - Date.now() / 1000) < 120,
        "the attempt's time in unix seconds",
      );
      t.same(
        verifier.verify(request.rawBody.toString("utf8"), request.headers as Record<string, string>),
        JSON.parse(request.rawBody.toString("utf8")),
        "standardwebhooks verifies the attempt",
      );
      t.equal(
        request.headers["x-service-review-signature"],
        createHmac("sha256", secret).update(request.rawBody).digest("hex"),
        "our signature: the hex HMAC of the body under the whole secret, as before",
      );
    }
  },
);

t.test(
  "webhook-id is the event's id on every attempt, to every subscription it went to and on a resend, and the standardwebhooks package verifies each",
  async (t) => {
    const retried = `/fail-twice-event-${crypto.randomUUID()}`;
    const direct = `/event-${crypto.randomUUID()}`;
    const first = await rig.subscribe(rig.receiver.url(retried), ["intake.submitted"]);
    const second = await rig.subscribe(rig.receiver.url(direct), ["intake.submitted"]);
    await rig.emitIntake();
    const retriedDelivery = await rig.finalDelivery(first.id);
    const directDelivery = await rig.finalDelivery(second.id);
    if (!retriedDelivery || !directDelivery) return t.fail("not delivered");
    t.match(retriedDelivery, { status: "delivered", attempts: 3 });
    t.match(directDelivery, { status: "delivered", attempts: 1 });
    const eventId = retriedDelivery.event_id;
    t.match(eventId, /^evt_[0-9a-f-]{36}$/);
    t.equal(directDelivery.event_id, eventId, "one event, a delivery to each subscription");
    t.not(directDelivery.id, retriedDelivery.id);

    const res = await rig.server.request(`/v1/webhooks/deliveries/${retriedDelivery.id}/redeliver`, {
      method: "POST",
      token: rig.tenant.token,
    });
    t.equal(res.status, 202);
    const resend = (await res.json()) as DeliveryView;
    t.match(resend, { event_id: eventId, origin: "redelivery", redelivery_of: retriedDelivery.id });
    t.not(resend.id, retriedDelivery.id, "a resend is a delivery of its own");
    const resent = await waitFor(
      async () => (await rig.deliveries()).find((delivery) => delivery.id === resend.id),
      (delivery) => delivery?.status === "delivered",
    );
    t.equal(resent?.status, "delivered");

    const retries = rig.receiver.receivedAt(retried);
    const [directRequest] = rig.receiver.receivedAt(direct);
    t.equal(retries.length, 4, "three attempts, then the resend");
    if (!directRequest) return t.fail("nothing received directly");
    for (const [secret, request] of [
      ...retries.map((request) => [first.secret, request] as const),
      [second.secret, directRequest] as const,
    ]) {
      t.equal(request.headers["webhook-id"], eventId, "webhook-id is the event's id");
      const verified = new Webhook(secret).verify(
        request.rawBody.toString("utf8"),
        request.headers as Record<string, string>,
      ) as { id?: string };
      t.equal(verified.id, eventId, "standardwebhooks verifies it, and the body's id is the event's");
    }
    t.same(
      retries.map((request) => request.headers["x-service-review-delivery"]),
      [retriedDelivery.id, retriedDelivery.id, retriedDelivery.id, resend.id],
      "X-Service-Review-Delivery names the delivery: the same on retries, the resend's own on the resend",
    );
    t.equal(
      new Set(retries.map((request) => request.rawBody.toString("utf8"))).size,
      1,
      "the resend's body is the original's, byte for byte",
    );
    // Later tests' events reach only their own subscriptions.
    for (const { id } of [first, second])
      await rig.server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: rig.tenant.token });
  },
);

t.test(
  "new Webhook(secret) of the standardwebhooks package, given each subscription's secret exactly as returned, verifies every real delivery",
  async (t) => {
    const subscriptions = await Promise.all(
      Array.from({ length: 40 }, async (_, index) => {
        const path = `/many-secrets-${index}-${crypto.randomUUID()}`;
        return { path, ...(await rig.subscribe(rig.receiver.url(path), ["intake.submitted"])) };
      }),
    );
    await rig.emitIntake();
    let verified = 0;
    for (const { id, path, secret } of subscriptions) {
      t.equal((await rig.finalDelivery(id))?.status, "delivered");
      const [request] = rig.receiver.receivedAt(path);
      if (!request) {
        t.fail(`nothing received at ${path}`);
        continue;
      }
      const payload = new Webhook(secret).verify(
        request.rawBody.toString("utf8"),
        request.headers as Record<string, string>,
      );
      if ((payload as { event?: string }).event === "intake.submitted") verified++;
    }
    t.equal(verified, 40, "40 deliveries, 40 secrets, every one verified");
    // Later tests' events reach only their own subscriptions.
    for (const { id } of subscriptions) {
      const res = await rig.server.request(`/v1/webhooks/subscriptions/${id}`, {
        method: "DELETE",
        token: rig.tenant.token,
      });
      t.equal(res.status, 204);
    }
  },
);

t.test(
  "the connection goes to the resolved and checked address: the host has no DNS record, yet its certificate name is verified and the delivery arrives",
  async (t) => {
    await t.rejects(
      dns.promises.lookup(RECEIVER_HOST),
      "no DNS answer for the test host: a second lookup could not connect",
    );
    const path = `/pinned-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path));
    await rig.emitIntake();
    t.equal((await rig.finalDelivery(id))?.status, "delivered");
    t.equal(rig.receiver.receivedAt(path).length, 1);
  },
);

t.test("any 2xx answer marks the delivery delivered", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/accepted-${crypto.randomUUID()}`));
  await rig.emitIntake();
  t.match(await rig.finalDelivery(id), { status: "delivered", attempts: 1, response_code: 202, error_message: null });
});

t.test(
  "failed attempts are retried with the same delivery id: 500, 500, then 200 is delivered after 3 attempts",
  async (t) => {
    const path = `/fail-twice-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path));
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    t.match(delivery, { status: "delivered", attempts: 3, response_code: 200, error_message: null });
    const received = rig.receiver.receivedAt(path);
    t.equal(received.length, 3);
    t.same(
      new Set(received.map((request) => request.headers["x-service-review-delivery"])),
      new Set([delivery?.id]),
      "one delivery id on every attempt",
    );
    t.equal(new Set(received.map((request) => request.rawBody.toString("utf8"))).size, 1, "the same body every time");
    t.equal(
      new Set(received.map((request) => request.headers["x-service-review-signature"])).size,
      1,
      "the same signature every time",
    );
  },
);

t.test(
  "failures until the last attempt end failed after MAX_DELIVERY_ATTEMPTS attempts, with nothing left queued",
  async (t) => {
    const path = `/always-503-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path));
    await rig.emitIntake();
    const delivery = await rig.finalDelivery(id);
    t.match(delivery, {
      status: "failed",
      attempts: 3,
      response_code: 503,
      error_message: "HTTP status 503",
      next_attempt_at: null,
    });
    t.equal(rig.receiver.receivedAt(path).length, 3);
    // The last attempt is recorded inside its job; graphile-worker removes the job once the task returns.
    const left = await waitFor(
      () => jobsOfDelivery(rig.server.services.db, delivery?.id ?? ""),
      (jobs) => jobs.length === 0 || jobs.some((job) => job.locked_at === null),
    );
    t.same(left, [], "no job of it left");
  },
);

t.test("a redirect is a failed attempt and its Location is never followed", async (t) => {
  const path = `/redirect-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await rig.emitIntake();
  t.match(await rig.finalDelivery(id), {
    status: "failed",
    attempts: 3,
    response_code: 302,
    error_message: "HTTP status 302",
  });
  t.equal(rig.receiver.receivedAt(path).length, 3);
  t.equal(rig.receiver.receivedAt("/followed").length, 0, "the Location was not requested");
});

t.test("a refused connection is a failed attempt", async (t) => {
  const port = await closedPort();
  const { id } = await rig.subscribe(`https://${RECEIVER_HOST}:${port}/closed`);
  await rig.emitIntake();
  t.match(await rig.finalDelivery(id), {
    status: "failed",
    attempts: 3,
    response_code: null,
    error_message: "Connection failed",
  });
});

t.test(
  "a delivery whose subscription is inactive when its job runs is failed with that reason and not sent",
  async (t) => {
    const path = `/inactive-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path));
    // Deactivated after the event was queued (in the same transaction, so the job cannot run first),
    // the way another platform service sharing the database might: only the worker can notice.
    await rig.server.services.db.transaction(async (trx) => {
      await emitEvent(trx, rig.tenant.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() });
      await trx("integrator.webhook_subscriptions")
        .where({ tenant_id: rig.tenant.tenantId, id })
        .update({ is_active: false });
    });
    t.match(await rig.finalDelivery(id), {
      status: "failed",
      attempts: 0,
      response_code: null,
      error_message: /deactivated/,
    });
    await rig.jobsDrained();
    t.equal(rig.receiver.receivedAt(path).length, 0, "nothing was sent");
  },
);

t.test(
  "a delivery whose subscription secret cannot be opened (another ENCRYPTION_KEY) is failed without sending",
  async (t) => {
    const path = `/unreadable-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path));
    await rig.server.services.db.transaction(async (trx) => {
      await trx("integrator.webhook_subscriptions")
        .where({ tenant_id: rig.tenant.tenantId, id })
        .update({ secret_encrypted: "v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA" });
      await emitEvent(trx, rig.tenant.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() });
    });
    t.match(await rig.finalDelivery(id), {
      status: "failed",
      attempts: 0,
      error_message: /signing secret could not be read/,
    });
    t.equal(rig.receiver.receivedAt(path).length, 0);
  },
);

t.test("a job whose delivery is already final does nothing", async (t) => {
  const path = `/final-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await rig.emitIntake();
  const delivery = await rig.finalDelivery(id);
  t.equal(delivery?.status, "delivered");
  if (!delivery) return;
  // A job queued before delivery jobs named their attempt (no attempts in its payload) and one for the
  // attempt just made.
  for (const payload of [{}, { attempts: 0 }])
    await rig.server.services.db.raw("select graphile_worker.add_job(?, ?::json)", [
      JOB.deliverWebhook,
      JSON.stringify({ tenant_id: rig.tenant.tenantId, delivery_id: delivery.id, ...payload }),
    ]);
  t.equal(await rig.jobsDrained(), 0, "the jobs ran and completed");
  t.equal(rig.receiver.receivedAt(path).length, 1, "not sent again");
  t.match(
    (await rig.deliveries()).find((row) => row.id === delivery.id),
    { status: "delivered", attempts: 1 },
  );
});

t.test(
  "every received body is valid against the document's webhooks schema for its kind and carries no filename, item_metadata or document text",
  async (t) => {
    const path = `/kinds-${crypto.randomUUID()}`;
    // `*` takes every lifecycle kind; the operational ones only when named.
    await rig.subscribe(rig.receiver.url(path), ["*", "webhook.endpoint_disabled", "webhook.delivery_exhausted"]);
    // The tenant's other subscriptions may fail meanwhile and report it (webhook.*) to this one: only the
    // events emitted here, known by their ids, are counted.
    const ours = new Set<string>();
    const id = () => {
      const value = crypto.randomUUID();
      ours.add(value);
      return value;
    };
    const data: Record<EventKind, Record<string, unknown>> = {
      "document.status_changed": {
        document_id: id(),
        submission_id: id(),
        item_id: id(),
        status: "processing",
        previous_status: "uploaded",
      },
      "document.uploaded": { document_id: id(), status: "uploaded" },
      "document.completed": { document_id: id(), status: "completed" },
      "adjudication.case_created": { case_id: id(), document_id: id(), status: "open" },
      "adjudication.case_resolved": { case_id: id(), status: "resolved", outcome: "approved" },
      "intake.submitted": {
        submission_id: id(),
        external_reference: "po-9",
        module: "claims",
        tier: null,
        status: "received",
        item_count: 1,
        accepted_count: 1,
        failed_count: 0,
      },
      "intake.batch_submitted": {
        submission_id: id(),
        external_reference: null,
        module: null,
        tier: null,
        status: "rejected",
        item_count: 3,
        accepted_count: 0,
        failed_count: 3,
      },
      "scorecard.created": { scorecard_id: id(), case_id: id() },
      "webhook.endpoint_disabled": { subscription_id: id(), reason: "20 deliveries in a row failed" },
      "webhook.delivery_exhausted": {
        delivery_id: id(),
        subscription_id: id(),
        event_id: `evt_${id()}`,
        event_type: "document.completed",
        attempts: 3,
        last_response_code: null,
      },
    };
    for (const kind of EVENT_KINDS)
      await emitEvent(rig.server.services.db, rig.tenant.tenantId, kind, data[kind] as never);
    const emittedHere = (requests: ReturnType<typeof rig.receiver.receivedAt>) =>
      requests.filter((request) => {
        const body = JSON.parse(request.rawBody.toString("utf8")) as { data: Record<string, unknown> };
        return Object.values(body.data).some((value) => ours.has(String(value).replace(/^evt_/, "")));
      });
    const received = await waitFor(
      async () => emittedHere(rig.receiver.receivedAt(path)),
      (requests) => requests.length >= EVENT_KINDS.length,
    );
    t.equal(received.length, EVENT_KINDS.length);
    for (const request of received) {
      const body = JSON.parse(request.rawBody.toString("utf8")) as { event: string };
      t.equal(request.headers["x-service-review-event"], body.event);
      t.same(webhookSchemaErrors(body.event, body), [], `${body.event} matches the document`);
      t.notMatch(
        request.rawBody.toString("utf8"),
        /filename|item_metadata|file_size|mime_type/,
        `${body.event} carries identifiers and status only`,
      );
    }
  },
);

t.test("no API response failed the document's response validation", async (t) => {
  t.same(rig.server.errors, []);
});
