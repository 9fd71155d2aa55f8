// Redelivery and test events against a real HTTPS receiver on loopback: a test
// event is a webhook.test delivery that matches the document; a redelivery is a new delivery of the
// same body naming the original; both are limited per tenant, and per portal link for a link's holder
// (429 RATE_LIMITED with Retry-After), refused for disabled or deleted subscriptions, and isolated between
// tenants.
import t from "tap";
import { Webhook } from "standardwebhooks";
import { emitEvent } from "../../db/events.ts";
import { hmacSha256Hex } from "../../foundation/signing.ts";
import { canonicalJson } from "../../foundation/canonical-json.ts";
import { EVENT_KINDS } from "../../db/events.ts";
import type { DeliveryView } from "../../db/webhooks/views.ts";
import type { ReceivedRequest } from "../helpers/https-receiver.ts";
import { createTestTenant } from "../helpers/server.ts";
import { intakeEventData, startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { webhookSchemaErrors } from "../helpers/webhook-schemas.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);
const PER_MINUTE = 4;
let rig: WebhookRig;

t.before(async () => {
  rig = await startWebhookRig(t, ca, { env: { WEBHOOK_MANUAL_SENDS_PER_MINUTE: String(PER_MINUTE) } });
});

/** A fresh tenant of the rig's server (each test gets its own manual-send budget). */
async function tenant() {
  return createTestTenant(rig.server.services);
}

async function subscribeAs(token: string, url: string): Promise<{ id: string; secret: string }> {
  const res = await rig.server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token,
    json: { url, events: ["intake.submitted"] },
  });
  if (res.status !== 201) throw new Error(`subscribe answered ${res.status}`);
  return (await res.json()) as { id: string; secret: string };
}

const post = (path: string, token: string) => rig.server.request(path, { method: "POST", token });

async function received(path: string, count = 1): Promise<ReceivedRequest[]> {
  return waitFor(
    async () => rig.receiver.receivedAt(path),
    (requests) => requests.length >= count,
  );
}

async function delivery(token: string, id: string): Promise<DeliveryView> {
  const res = await rig.server.request(`/v1/webhooks/deliveries/${id}`, { token });
  return ((await res.json()) as { delivery: DeliveryView }).delivery;
}

t.test(
  "a test event is a signed webhook.test delivery, valid against its webhooks entry, shown as origin test",
  async (t) => {
    const who = await tenant();
    const path = `/test-event-${crypto.randomUUID()}`;
    const { id, secret } = await subscribeAs(who.token, rig.receiver.url(path));
    const res = await post(`/v1/webhooks/subscriptions/${id}/test`, who.token);
    t.equal(res.status, 202);
    const queued = (await res.json()) as DeliveryView;
    t.match(queued, {
      subscription_id: id,
      event_type: "webhook.test",
      status: "pending",
      attempts: 0,
      origin: "test",
    });
    t.equal(queued.redelivery_of, null);
    const [request] = await received(path);
    if (!request) return t.fail("nothing received");
    const raw = request.rawBody.toString("utf8");
    t.same(webhookSchemaErrors("webhook.test", JSON.parse(raw)), [], "the body matches the document");
    t.same(JSON.parse(raw).data, { subscription_id: id });
    t.equal(request.headers["x-service-review-event"], "webhook.test");
    t.equal(request.headers["x-service-review-delivery"], queued.id);
    t.equal(request.headers["x-service-review-signature"], hmacSha256Hex(secret, raw), "signed with the secret");
    const final = await waitFor(
      () => delivery(who.token, queued.id),
      (shown) => shown.status !== "pending",
    );
    t.match(final, { status: "delivered", origin: "test" });
  },
);

t.test("an example of each kind: the document's example event, signed, valid against its webhooks entry", async (t) => {
  for (const kind of EVENT_KINDS) {
    const who = await tenant();
    const path = `/example-${kind}-${crypto.randomUUID()}`;
    const { id } = await subscribeAs(who.token, rig.receiver.url(path));
    const res = await rig.server.request(`/v1/webhooks/subscriptions/${id}/test`, {
      method: "POST",
      token: who.token,
      json: { event_type: kind },
    });
    t.equal(res.status, 202, kind);
    const queued = (await res.json()) as DeliveryView;
    t.match(queued, { subscription_id: id, event_type: kind, origin: "test", status: "pending" }, kind);
    const [request] = await received(path);
    if (!request) return t.fail(`nothing received for ${kind}`);
    const body = JSON.parse(request.rawBody.toString("utf8")) as { event: string; tenant_id: string };
    t.same(webhookSchemaErrors(kind, body), [], `${kind}: the body matches the document`);
    t.match(body, { event: kind, tenant_id: who.tenantId }, `${kind}: for the subscription's tenant`);
    t.equal(request.headers["x-service-review-event"], kind);
  }
  const who = await tenant();
  const { id } = await subscribeAs(who.token, rig.receiver.url("/example-refused"));
  for (const event_type of ["webhook.test", "*", "intake.unknown"]) {
    const res = await rig.server.request(`/v1/webhooks/subscriptions/${id}/test`, {
      method: "POST",
      token: who.token,
      json: { event_type },
    });
    t.equal(res.status, 422, `${event_type} is no kind to send an example of`);
  }
});

t.test(
  "test and example deliveries are marked on the wire (X-Service-Review-Test, test: true in the signed envelope); a real event's are not",
  async (t) => {
    const who = await tenant();
    const path = `/marked-${crypto.randomUUID()}`;
    const { id, secret } = await subscribeAs(who.token, rig.receiver.url(path));
    // As an integrator verifies: the standardwebhooks package, the secret exactly as returned, the raw body.
    const verified = (request: ReceivedRequest) =>
      new Webhook(secret).verify(request.rawBody.toString("utf8"), request.headers as Record<string, string>) as {
        event: string;
        test?: unknown;
      };

    const example = await rig.server.request(`/v1/webhooks/subscriptions/${id}/test`, {
      method: "POST",
      token: who.token,
      json: { event_type: "document.completed" },
    });
    t.equal(example.status, 202);
    const [sent] = await received(path, 1);
    if (!sent) return t.fail("the example was not received");
    t.equal(sent.headers["x-service-review-test"], "true", "an example carries X-Service-Review-Test: true");
    t.match(verified(sent), { event: "document.completed", test: true }, "and test: true in the verified envelope");
    t.equal(sent.rawBody.toString("utf8"), canonicalJson(JSON.parse(sent.rawBody.toString("utf8"))), "keys sorted");

    t.equal((await post(`/v1/webhooks/subscriptions/${id}/test`, who.token)).status, 202);
    const [, test] = await received(path, 2);
    if (!test) return t.fail("the test event was not received");
    t.equal(test.headers["x-service-review-test"], "true", "a webhook.test carries the header");
    t.match(verified(test), { event: "webhook.test", test: true }, "and the field");

    const exampleId = String(sent.headers["x-service-review-delivery"]);
    t.equal((await post(`/v1/webhooks/deliveries/${exampleId}/redeliver`, who.token)).status, 202);
    const [, , resent] = await received(path, 3);
    if (!resent) return t.fail("the resend was not received");
    t.equal(resent.headers["x-service-review-test"], "true", "a resend of an example is marked too");
    t.match(verified(resent), { event: "document.completed", test: true });

    await rig.server.services.db.transaction((trx) =>
      emitEvent(trx, who.tenantId, "intake.submitted", intakeEventData()),
    );
    const [, , , real] = await received(path, 4);
    if (!real) return t.fail("the real event was not received");
    t.equal(real.headers["x-service-review-test"], undefined, "a real event's delivery has no test header");
    const envelope = verified(real);
    t.equal(envelope.event, "intake.submitted");
    t.notOk("test" in envelope, "and no test property");
  },
);

t.test("a lifecycle event never produces webhook.test deliveries", async (t) => {
  const path = `/no-test-${crypto.randomUUID()}`;
  await rig.subscribe(rig.receiver.url(path), ["*"]);
  await rig.emitIntake();
  const [request] = await received(path);
  t.equal(request?.headers["x-service-review-event"], "intake.submitted");
});

t.test(
  "a redelivery is a new delivery of the same body to the same subscription, naming the original in redelivery_of",
  async (t) => {
    const path = `/redeliver-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path), ["intake.submitted"]);
    await rig.emitIntake();
    const original = await rig.finalDelivery(id);
    if (!original) return t.fail("no original delivery");
    const res = await post(`/v1/webhooks/deliveries/${original.id}/redeliver`, rig.tenant.token);
    t.equal(res.status, 202);
    const again = (await res.json()) as DeliveryView;
    t.not(again.id, original.id, "its own id");
    t.match(again, { subscription_id: id, event_type: "intake.submitted", origin: "redelivery", status: "pending" });
    t.equal(again.redelivery_of, original.id);
    t.same(again.payload, original.payload, "the same envelope, timestamp included");
    const [first, second] = await received(path, 2);
    t.equal(first?.headers["x-service-review-delivery"], original.id);
    t.equal(second?.headers["x-service-review-delivery"], again.id, "sent with the new delivery id");
    t.equal(second?.rawBody.toString("utf8"), first?.rawBody.toString("utf8"), "byte for byte the same body");
    t.equal(second?.rawBody.toString("utf8"), canonicalJson(original.payload));
    const shownOriginal = await delivery(rig.tenant.token, original.id);
    t.equal(shownOriginal.attempts, 1, "the original is left as it was");
    const listed = await rig.deliveries();
    t.ok(
      listed.some((row) => row.id === again.id && row.redelivery_of === original.id),
      "the list shows it as a redelivery",
    );
  },
);

t.test(
  "manual sends are limited per tenant: beyond WEBHOOK_MANUAL_SENDS_PER_MINUTE 429 RATE_LIMITED with Retry-After",
  async (t) => {
    const who = await tenant();
    const { id } = await subscribeAs(who.token, rig.receiver.url(`/limited-${crypto.randomUUID()}`));
    const statuses = [];
    for (let i = 0; i < PER_MINUTE; i++)
      statuses.push((await post(`/v1/webhooks/subscriptions/${id}/test`, who.token)).status);
    t.same(statuses, Array(PER_MINUTE).fill(202));
    const refused = await post(`/v1/webhooks/subscriptions/${id}/test`, who.token);
    t.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get("retry-after"));
    t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter} is within the minute`);
    const body = (await refused.json()) as { error: { code: string; details: Record<string, unknown> } };
    t.equal(body.error.code, "RATE_LIMITED");
    t.match(body.error.details, { scope: "webhook_manual_sends", limit: PER_MINUTE, window_seconds: 60 });
    const listed = await rig.server.request(`/v1/webhooks/deliveries?subscription_id=${id}`, { token: who.token });
    t.equal(
      ((await listed.json()) as { deliveries: unknown[] }).deliveries.length,
      PER_MINUTE,
      "nothing queued for it",
    );

    const other = await tenant();
    const theirs = await subscribeAs(other.token, rig.receiver.url(`/limited-other-${crypto.randomUUID()}`));
    t.equal(
      (await post(`/v1/webhooks/subscriptions/${theirs.id}/test`, other.token)).status,
      202,
      "another tenant has its own budget",
    );
  },
);

t.test(
  "a portal link's holder has a manual-send budget of its own: using it up leaves the tenant's and another link's",
  async (t) => {
    const who = await tenant();
    const { id } = await subscribeAs(who.token, rig.receiver.url(`/link-budget-${crypto.randomUUID()}`));
    const portalCredential = async (token: string, path = "/v1/webhooks/portal-sessions") => {
      const res = await post(path, token);
      t.equal(res.status, 201);
      return new URL(((await res.json()) as { url: string }).url).hash.slice("#token=".length);
    };
    const [link, otherLink] = [await portalCredential(who.token), await portalCredential(who.token)];
    const sendTest = async (token: string) => (await post(`/v1/webhooks/subscriptions/${id}/test`, token)).status;

    for (let i = 0; i < PER_MINUTE; i++) t.equal(await sendTest(link), 202, `the link's send ${i + 1}`);
    const refused = await post(`/v1/webhooks/subscriptions/${id}/test`, link);
    t.equal(refused.status, 429, "the link's budget is used up");
    const body = (await refused.json()) as { error: { message: string; details: Record<string, unknown> } };
    t.match(body.error, {
      message: /through this portal link/,
      details: { scope: "webhook_manual_sends", limit: PER_MINUTE },
    });
    const refreshed = await portalCredential(link, "/v1/webhooks/portal-sessions/refresh");
    t.equal(await sendTest(refreshed), 429, "a credential refreshed from the link shares its budget");

    t.equal(await sendTest(otherLink), 202, "another link of the same tenant and creator has its own");
    const tenants = [];
    for (let i = 0; i < PER_MINUTE; i++) tenants.push(await sendTest(who.token));
    t.same(tenants, Array(PER_MINUTE).fill(202), "the tenant's own callers still have all of theirs");
    t.equal(await sendTest(who.token), 429, "and then theirs is used up too");
    const buckets = await rig.server.services
      .db("integrator.webhook_deliveries")
      .where({ tenant_id: who.tenantId, subscription_id: id })
      .groupBy("manual_send_bucket")
      .select("manual_send_bucket")
      .count<{ manual_send_bucket: string | null; count: string }[]>("* as count");
    t.same(
      buckets.map((row) => Number(row.count)).sort(),
      [1, PER_MINUTE, PER_MINUTE],
      "each delivery names the bucket it counted in",
    );
  },
);

t.test("the manual-send limit holds under concurrent requests", async (t) => {
  const who = await tenant();
  const { id } = await subscribeAs(who.token, rig.receiver.url(`/concurrent-${crypto.randomUUID()}`));
  const statuses = await Promise.all(
    Array.from(
      { length: PER_MINUTE * 3 },
      async () => (await post(`/v1/webhooks/subscriptions/${id}/test`, who.token)).status,
    ),
  );
  t.equal(statuses.filter((status) => status === 202).length, PER_MINUTE);
  t.equal(statuses.filter((status) => status === 429).length, PER_MINUTE * 2);
});

t.test("redeliveries count towards the same limit as test events", async (t) => {
  const who = await tenant();
  const path = `/shared-budget-${crypto.randomUUID()}`;
  const { id } = await subscribeAs(who.token, rig.receiver.url(path));
  const test = (await (await post(`/v1/webhooks/subscriptions/${id}/test`, who.token)).json()) as DeliveryView;
  for (let i = 1; i < PER_MINUTE; i++)
    t.equal((await post(`/v1/webhooks/deliveries/${test.id}/redeliver`, who.token)).status, 202);
  t.equal((await post(`/v1/webhooks/deliveries/${test.id}/redeliver`, who.token)).status, 429);
});

t.test(
  "a disabled subscription refuses test events and redeliveries with 409 WEBHOOK_SUBSCRIPTION_DISABLED",
  async (t) => {
    const who = await tenant();
    const { id } = await subscribeAs(who.token, rig.receiver.url(`/disabled-${crypto.randomUUID()}`));
    const test = (await (await post(`/v1/webhooks/subscriptions/${id}/test`, who.token)).json()) as DeliveryView;
    await rig.server.services
      .db("integrator.webhook_subscriptions")
      .where({ tenant_id: who.tenantId, id })
      .update({ disabled_at: new Date(), disabled_reason: "20 deliveries in a row failed" });
    for (const path of [`/v1/webhooks/subscriptions/${id}/test`, `/v1/webhooks/deliveries/${test.id}/redeliver`]) {
      const res = await post(path, who.token);
      t.equal(res.status, 409, path);
      t.equal(((await res.json()) as { error: { code: string } }).error.code, "WEBHOOK_SUBSCRIPTION_DISABLED");
    }
  },
);

t.test(
  "a deleted subscription: test events 404, redeliveries of its deliveries 409 WEBHOOK_SUBSCRIPTION_INACTIVE",
  async (t) => {
    const who = await tenant();
    const { id } = await subscribeAs(who.token, rig.receiver.url(`/deleted-${crypto.randomUUID()}`));
    const test = (await (await post(`/v1/webhooks/subscriptions/${id}/test`, who.token)).json()) as DeliveryView;
    t.equal(
      (await rig.server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: who.token })).status,
      204,
    );
    t.equal((await post(`/v1/webhooks/subscriptions/${id}/test`, who.token)).status, 404);
    const res = await post(`/v1/webhooks/deliveries/${test.id}/redeliver`, who.token);
    t.equal(res.status, 409);
    t.equal(((await res.json()) as { error: { code: string } }).error.code, "WEBHOOK_SUBSCRIPTION_INACTIVE");
  },
);

t.test("another tenant's subscription and delivery answer 404 exactly like missing ones", async (t) => {
  const owner = await tenant();
  const stranger = await tenant();
  const { id } = await subscribeAs(owner.token, rig.receiver.url(`/isolated-${crypto.randomUUID()}`));
  const test = (await (await post(`/v1/webhooks/subscriptions/${id}/test`, owner.token)).json()) as DeliveryView;
  const missing = crypto.randomUUID();
  for (const [foreign, unknown] of [
    [`/v1/webhooks/subscriptions/${id}/test`, `/v1/webhooks/subscriptions/${missing}/test`],
    [`/v1/webhooks/subscriptions/${id}/test`, `/v1/webhooks/subscriptions/not-a-uuid/test`],
    [`/v1/webhooks/deliveries/${test.id}/redeliver`, `/v1/webhooks/deliveries/${missing}/redeliver`],
    [`/v1/webhooks/deliveries/${test.id}/redeliver`, `/v1/webhooks/deliveries/not-a-uuid/redeliver`],
  ] as const) {
    const a = await post(foreign, stranger.token);
    const b = await post(unknown, stranger.token);
    t.equal(a.status, 404, foreign);
    t.equal(b.status, 404, unknown);
    const bodyA = (await a.json()) as { error: unknown };
    const bodyB = (await b.json()) as { error: unknown };
    t.same(bodyA.error, bodyB.error, "the same answer");
  }
});
