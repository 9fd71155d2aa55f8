// Listen sessions through the API, with a real worker: a session takes the tenant's events as an endpoint
// does; a poll hands out each attempt as the exact request the worker signed (the standardwebhooks package
// verifies it with the secret as the API showed it); the answer reported is recorded as the attempt; a
// failure is retried, an unanswered offer times out, a session that ends fails what is pending; and
// sessions stay within their tenant and their limits.
import { randomUUID } from "node:crypto";
import t from "tap";
import { Webhook } from "standardwebhooks";
import { createTestTenant, type TestTenant } from "../helpers/server.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import { emitEvent } from "../../db/events.ts";
import { intakeEventData } from "../helpers/webhooks.ts";
import type { components } from "../../generated/openapi.ts";

type Schemas = components["schemas"];
type Session = Schemas["WebhookListenSessionResponse"];
type Poll = Schemas["WebhookListenPollResponse"];
type ListenDelivery = Schemas["WebhookListenDelivery"];
type DeliveryDetail = Schemas["WebhookDeliveryDetailResponse"];

const rig: WebhookRig = await startWebhookRig(t, testCa(t), {
  env: { WEBHOOK_LISTEN_SESSIONS_PER_TENANT: "3", MAX_DELIVERY_ATTEMPTS: "3", WORKER_CONCURRENCY: "1" },
});
const { server } = rig;

async function startSession(who: TestTenant, body?: unknown): Promise<Session> {
  const res = await server.request("/v1/webhooks/listen-sessions", {
    method: "POST",
    token: who.token,
    ...(body === undefined ? {} : { json: body }),
  });
  if (res.status !== 201) throw new Error(`start answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Session;
}

function poll(who: TestTenant, sessionId: string, waitSeconds = 10): Promise<Response> {
  return server.request(`/v1/webhooks/listen-sessions/${sessionId}/poll?wait_seconds=${waitSeconds}`, {
    method: "POST",
    token: who.token,
  });
}

/** Polls until a delivery is handed out; returns it. */
async function nextDelivery(who: TestTenant, sessionId: string): Promise<ListenDelivery> {
  const taken = await waitFor(
    async () => {
      const res = await poll(who, sessionId, 5);
      if (res.status !== 200) throw new Error(`poll answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as Poll).deliveries;
    },
    (deliveries) => deliveries.length > 0,
    { seconds: 60 },
  );
  const [first] = taken;
  if (!first) throw new Error("no delivery was handed out");
  return first;
}

function answer(who: TestTenant, sessionId: string, body: unknown): Promise<Response> {
  return server.request(`/v1/webhooks/listen-sessions/${sessionId}/answers`, {
    method: "POST",
    token: who.token,
    json: body,
  });
}

async function deliveryDetail(who: TestTenant, deliveryId: string): Promise<DeliveryDetail> {
  const res = await server.request(`/v1/webhooks/deliveries/${deliveryId}`, { token: who.token });
  if (res.status !== 200) throw new Error(`delivery answered ${res.status}`);
  return (await res.json()) as DeliveryDetail;
}

/** Waits until the delivery has `attempts` attempts recorded; returns it with them. */
function recorded(who: TestTenant, deliveryId: string, attempts: number): Promise<DeliveryDetail> {
  return waitFor(
    () => deliveryDetail(who, deliveryId),
    // The delivery is read before its attempts (two statements): both must show it.
    (detail) => detail.delivery.attempts >= attempts && detail.attempts.length >= attempts,
    { seconds: 60 },
  );
}

const emitIntake = (who: TestTenant) =>
  server.services.db.transaction((trx) => emitEvent(trx, who.tenantId, "intake.submitted", intakeEventData()));

t.test(
  "a session takes a matching event; the poll hands out the exact request the worker signed, which standardwebhooks verifies with the secret as shown; the reported answer is the recorded attempt",
  async (t) => {
    const who = await createTestTenant(server.services);
    const session = await startSession(who);
    t.match(session, { tenant_id: who.tenantId, events: ["*"], secret: /^whsec_/ });
    await emitIntake(who);
    const offered = await nextDelivery(who, session.id);
    t.match(offered, { attempt: 1, event_type: "intake.submitted", event_id: /^evt_/ });

    const verified = new Webhook(session.secret).verify(offered.body, offered.headers) as { id: string };
    t.equal(verified.id, offered.event_id, "standardwebhooks verifies the body and headers as handed out");
    t.equal(offered.headers["webhook-id"], offered.event_id);
    t.equal(offered.headers["X-Service-Review-Delivery"], offered.delivery_id);
    t.equal(offered.headers["Content-Length"], String(Buffer.byteLength(offered.body)));

    const reported = await answer(who, session.id, {
      delivery_id: offered.delivery_id,
      attempt: 1,
      response_code: 204,
      duration_ms: 7,
      response_headers: { "x-receiver": "laptop" },
      response_body: "",
    });
    t.equal(reported.status, 202);
    const detail = await recorded(who, offered.delivery_id, 1);
    t.match(detail.delivery, {
      status: "delivered",
      attempts: 1,
      response_code: 204,
      subscription_id: session.id,
      event_id: offered.event_id,
    });
    t.match(detail.attempts[0], {
      number: 1,
      outcome: "delivered",
      response_code: 204,
      duration_ms: 7,
      attempted_at: offered.offered_at,
      response_headers: { "x-receiver": "laptop" },
    });
    t.same(detail.attempts[0]?.request_headers, offered.headers, "the attempt keeps the headers handed out");

    const again = await answer(who, session.id, {
      delivery_id: offered.delivery_id,
      attempt: 1,
      response_code: 204,
      duration_ms: 7,
    });
    t.equal(again.status, 409, "an answer reported twice");
    t.match(await again.json(), { error: { code: "WEBHOOK_LISTEN_ANSWER_NOT_EXPECTED" } });
  },
);

t.test(
  "a failure answer is a failed attempt, retried on the delivery's schedule and offered again as the next attempt; the last failed attempt is reported to no endpoint",
  async (t) => {
    const who = await createTestTenant(server.services);
    // An endpoint of the tenant's that takes the reports of deliveries that used their attempts.
    const watching = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: who.token,
      json: { url: rig.receiver.url(`/watch-${randomUUID()}`), events: ["webhook.delivery_exhausted"] },
    });
    t.equal(watching.status, 201);
    const session = await startSession(who);
    await emitIntake(who);
    const first = await nextDelivery(who, session.id);
    const refused = await answer(who, session.id, {
      delivery_id: first.delivery_id,
      attempt: 1,
      response_code: 400,
      duration_ms: 3,
      response_headers: { "content-type": "application/json" },
      response_body: '{"error":"No matching signature found"}',
    });
    t.equal(refused.status, 202);
    const detail = await recorded(who, first.delivery_id, 1);
    t.match(detail.delivery, { status: "pending", attempts: 1, response_code: 400, error_message: "HTTP status 400" });
    t.match(detail.attempts[0], {
      outcome: "failed",
      error_class: "http_status",
      response_code: 400,
      response_body: '{"error":"No matching signature found"}',
    });

    // WEBHOOK_RETRY_SCHEDULE is 0s here: the retry is offered at once, signed anew.
    const second = await nextDelivery(who, session.id);
    t.match(second, { delivery_id: first.delivery_id, attempt: 2, event_id: first.event_id, body: first.body });
    t.ok(new Webhook(session.secret).verify(second.body, second.headers));
    const unreachable = await answer(who, session.id, {
      delivery_id: second.delivery_id,
      attempt: 2,
      error_class: "connection_failed",
      duration_ms: 1,
    });
    t.equal(unreachable.status, 202);
    const third = await nextDelivery(who, session.id);
    t.equal(third.attempt, 3);
    await answer(who, session.id, { delivery_id: third.delivery_id, attempt: 3, response_code: 500, duration_ms: 2 });
    const final = await recorded(who, first.delivery_id, 3);
    t.match(final.delivery, { status: "failed", attempts: 3, response_code: 500 });
    t.match(final.attempts[1], { outcome: "failed", error_class: "connection_failed", response_code: null });
    // A report would have been written with the last attempt's record: a session is a developer's local
    // receiver, not an endpoint whose failures the tenant's monitoring should hear of.
    const reports = await server.request("/v1/webhooks/deliveries?event_type=webhook.delivery_exhausted", {
      token: who.token,
    });
    t.equal(reports.status, 200);
    t.same(((await reports.json()) as { deliveries: unknown[] }).deliveries, [], "no webhook.delivery_exhausted");
  },
);

t.test("an offer nobody answers by answer_by is recorded as a timeout and retried", async (t) => {
  const who = await createTestTenant(server.services);
  const session = await startSession(who);
  await emitIntake(who);
  const offered = await nextDelivery(who, session.id);
  t.ok(Date.parse(offered.answer_by) - Date.parse(offered.offered_at) === 60_000, "answer_by is 60 s after offered_at");
  // Sixty seconds pass: the offer's answer_by and the job queued for that moment come now.
  await server.services
    .db("integrator.webhook_listen_offers")
    .where({ tenant_id: who.tenantId, delivery_id: offered.delivery_id })
    .update({ answer_by: server.services.db.raw("now()") });
  await server.services.db.raw(
    `update graphile_worker._private_jobs set run_at = now() where payload->>'delivery_id' = ?`,
    [offered.delivery_id],
  );
  const detail = await recorded(who, offered.delivery_id, 1);
  t.match(detail.attempts[0], {
    outcome: "failed",
    error_class: "timeout",
    error_message: "The listener took the delivery but reported no answer within 60 s.",
  });
  const late = await answer(who, session.id, {
    delivery_id: offered.delivery_id,
    attempt: 1,
    response_code: 204,
    duration_ms: 1,
  });
  t.equal(late.status, 409, "the late answer is refused");
  const retried = await nextDelivery(who, session.id);
  t.equal(retried.attempt, 2, "and the retry is offered");
});

t.test("a waiting poll is woken by the offer's notification as soon as the worker offers a delivery", async (t) => {
  const who = await createTestTenant(server.services);
  const session = await startSession(who);
  t.ok(server.services.listenWakeUps.connected, "the server listens for the offers' notifications");
  const started = Date.now();
  const waiting = poll(who, session.id, 25);
  await emitIntake(who);
  const res = await waiting;
  const body = (await res.json()) as Poll;
  t.equal(body.deliveries.length, 1);
  // Without the notification the poll would only look again 10 s into its wait (ListenWakeUps.recheckMs).
  t.ok(Date.now() - started < 8000, `answered after ${Date.now() - started} ms, before the poll looked by itself`);
});

t.test("a poll without an offer waits wait_seconds and answers an empty list", async (t) => {
  const who = await createTestTenant(server.services);
  const session = await startSession(who);
  const started = Date.now();
  const res = await poll(who, session.id, 1);
  t.equal(res.status, 200);
  const body = (await res.json()) as Poll;
  t.same(body.deliveries, []);
  t.ok(Date.now() - started >= 900, "it waited");
  t.ok(Date.parse(body.expires_at) >= started + 60_000, "the session lives 60 s past the wait");
});

t.test(
  "a session that ends (by DELETE, or unpolled past its end) fails its pending deliveries and answers 404",
  async (t) => {
    const who = await createTestTenant(server.services);
    const session = await startSession(who);
    await emitIntake(who);
    const offered = await nextDelivery(who, session.id);
    const ended = await server.request(`/v1/webhooks/listen-sessions/${session.id}`, {
      method: "DELETE",
      token: who.token,
    });
    t.equal(ended.status, 204);
    const detail = await deliveryDetail(who, offered.delivery_id);
    t.match(detail.delivery, {
      status: "failed",
      attempts: 0,
      error_message: "Listen session ended; the delivery was not sent",
    });
    t.equal((await poll(who, session.id, 0)).status, 404, "poll");
    const late = await answer(who, session.id, {
      delivery_id: offered.delivery_id,
      attempt: 1,
      response_code: 204,
      duration_ms: 1,
    });
    t.equal(late.status, 404, "answer");
    const twice = await server.request(`/v1/webhooks/listen-sessions/${session.id}`, {
      method: "DELETE",
      token: who.token,
    });
    t.equal(twice.status, 204, "ending it again");

    // Unpolled: its end passes, and the job queued for it ends it.
    const idle = await startSession(who);
    await emitIntake(who);
    await nextDelivery(who, idle.id);
    await emitIntake(who);
    await server.services.db.raw(
      `update integrator.webhook_subscriptions set expires_at = now() where tenant_id = ? and id = ?`,
      [who.tenantId, idle.id],
    );
    await server.services.db.raw(
      `update graphile_worker._private_jobs set run_at = now() where payload->>'session_id' = ?`,
      [idle.id],
    );
    const pending = await waitFor(
      async () => {
        const res = await server.request(`/v1/webhooks/deliveries?subscription_id=${idle.id}`, { token: who.token });
        return ((await res.json()) as Schemas["WebhookDeliveryListResponse"]).deliveries;
      },
      (deliveries) => deliveries.length === 2 && deliveries.every((delivery) => delivery.status === "failed"),
    );
    t.ok(
      pending.every((delivery) => delivery.error_message === "Listen session ended; the delivery was not sent"),
      "both deliveries, the one handed out and the one not yet offered",
    );
    t.equal((await poll(who, idle.id, 0)).status, 404);
    await emitIntake(who);
    const after = await server.request(`/v1/webhooks/deliveries?subscription_id=${idle.id}`, { token: who.token });
    t.equal(((await after.json()) as Schemas["WebhookDeliveryListResponse"]).deliveries.length, 2, "no new event");
  },
);

t.test(
  "a session is its tenant's: another tenant's token answers 404 for it, and other tenants' events never reach it",
  async (t) => {
    const owner = await createTestTenant(server.services);
    const other = await createTestTenant(server.services);
    const session = await startSession(owner);
    const otherSession = await startSession(other);
    await emitIntake(other);
    await nextDelivery(other, otherSession.id);
    t.equal((await poll(other, session.id, 0)).status, 404, "poll");
    t.equal(
      (await answer(other, session.id, { delivery_id: randomUUID(), attempt: 1, response_code: 204, duration_ms: 1 }))
        .status,
      404,
      "answer",
    );
    const deleted = await server.request(`/v1/webhooks/listen-sessions/${session.id}`, {
      method: "DELETE",
      token: other.token,
    });
    t.equal(deleted.status, 404, "delete");
    const own = (await (await poll(owner, session.id, 0)).json()) as Poll;
    t.same(own.deliveries, [], "the other tenant's event did not reach the owner's session");
  },
);

t.test(
  "limits: WEBHOOK_LISTEN_SESSIONS_PER_TENANT sessions that have not ended per tenant; sessions are no subscriptions",
  async (t) => {
    const who = await createTestTenant(server.services);
    const sessions = [await startSession(who), await startSession(who), await startSession(who)];
    const fourth = await server.request("/v1/webhooks/listen-sessions", { method: "POST", token: who.token });
    t.equal(fourth.status, 409);
    t.match(await fourth.json(), { error: { code: "WEBHOOK_LISTEN_SESSION_LIMIT_REACHED", details: { limit: 3 } } });
    const other = await createTestTenant(server.services);
    t.ok(await startSession(other), "another tenant is not held back");
    await server.request(`/v1/webhooks/listen-sessions/${sessions[0]?.id}`, { method: "DELETE", token: who.token });
    t.ok(await startSession(who), "an ended session no longer counts");

    const listed = await server.request("/v1/webhooks/subscriptions", { token: who.token });
    t.same(((await listed.json()) as Schemas["WebhookSubscriptionListResponse"]).subscriptions, [], "not listed");
    for (const path of ["", "/enable", "/test"]) {
      const res = await server.request(`/v1/webhooks/subscriptions/${sessions[1]?.id}${path}`, {
        method: path === "" ? "GET" : "POST",
        token: who.token,
      });
      t.equal(res.status, 404, `subscription operation ${path || "GET"}`);
    }
  },
);

t.test("a session signs with the secret given, or refuses one that is no Standard Webhooks key", async (t) => {
  const who = await createTestTenant(server.services);
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6h9OU7jGBWk=";
  const session = await startSession(who, { events: ["intake.submitted", "intake.submitted"], secret });
  t.equal(session.secret, secret);
  t.same(session.events, ["intake.submitted"], "duplicates removed");
  await emitIntake(who);
  const offered = await nextDelivery(who, session.id);
  t.ok(new Webhook(secret).verify(offered.body, offered.headers), "signed with the secret given");

  const short = await server.request("/v1/webhooks/listen-sessions", {
    method: "POST",
    token: who.token,
    json: { secret: "whsec_c2hvcnQgc2hvcnQgc2hvcnQgc2hvcnQ=" },
  });
  t.equal(short.status, 422);
  t.match(await short.json(), { detail: [{ loc: ["body", "secret"], type: "value_error" }] });
});

t.test("an answer gives exactly one of response_code and error_class, and names an attempt handed out", async (t) => {
  const who = await createTestTenant(server.services);
  const session = await startSession(who);
  await emitIntake(who);
  const offered = await nextDelivery(who, session.id);
  const both = await answer(who, session.id, {
    delivery_id: offered.delivery_id,
    attempt: 1,
    response_code: 200,
    error_class: "timeout",
    duration_ms: 1,
  });
  t.equal(both.status, 422);
  t.match(await both.json(), { detail: [{ loc: ["body"], type: "value_error" }] });
  const neither = await answer(who, session.id, { delivery_id: offered.delivery_id, attempt: 1, duration_ms: 1 });
  t.equal(neither.status, 422);
  const otherAttempt = await answer(who, session.id, {
    delivery_id: offered.delivery_id,
    attempt: 2,
    response_code: 200,
    duration_ms: 1,
  });
  t.equal(otherAttempt.status, 409);
  const unknown = await answer(who, session.id, {
    delivery_id: randomUUID(),
    attempt: 1,
    response_code: 200,
    duration_ms: 1,
  });
  t.equal(unknown.status, 409);
  t.equal((await poll(who, "not-a-uuid", 0)).status, 404);
});

t.test("a portal credential starts, polls and ends a session of its tenant", async (t) => {
  const who = await createTestTenant(server.services);
  const { token } = await server.services.tokens.issuePortal({
    subject: who.subject,
    tenantId: who.tenantId,
    creatorTenantId: who.tenantId,
    expiresInSeconds: 900,
  });
  const portal = { ...who, token };
  const session = await startSession(portal);
  await emitIntake(who);
  const offered = await nextDelivery(portal, session.id);
  t.equal((await answer(portal, session.id, { ...pick(offered), response_code: 200, duration_ms: 1 })).status, 202);
  const res = await server.request(`/v1/webhooks/listen-sessions/${session.id}`, { method: "DELETE", token });
  t.equal(res.status, 204);
});

function pick(offered: ListenDelivery): { delivery_id: string; attempt: number } {
  return { delivery_id: offered.delivery_id, attempt: offered.attempt };
}

t.test(
  "the worker never waits for a listener: an unpolled session's backlog holds back no other delivery of its tenant",
  async (t) => {
    // The rig's worker runs one job of a tenant at a time (WORKER_CONCURRENCY 1): a run that waited for the
    // listener would hold the tenant's only slot.
    const who = await createTestTenant(server.services);
    await startSession(who);
    for (let index = 0; index < 20; index++) await emitIntake(who);
    const path = `/after-listen-${randomUUID()}`;
    const res = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: who.token,
      json: { url: rig.receiver.url(path), events: ["*"] },
    });
    t.equal(res.status, 201);
    const started = Date.now();
    await emitIntake(who);
    const received = await waitFor(
      async () => rig.receiver.receivedAt(path).length,
      (count) => count === 1,
    );
    t.equal(received, 1);
    t.ok(Date.now() - started < 10_000, `delivered after ${Date.now() - started} ms`);
    const offered = await waitFor(
      async () =>
        (await server.services.db("integrator.webhook_listen_offers").where({ tenant_id: who.tenantId })).length,
      (count) => count === 21,
    );
    t.equal(offered, 21, "every delivery of the unpolled session was offered: none waits in a slot");
  },
);
