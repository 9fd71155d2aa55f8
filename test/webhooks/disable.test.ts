// Disabling a subscription by hand (the portal's "Disable"), black-box through HTTP with a real
// worker and HTTPS receiver: the subscription turns disabled with the time and `Disabled by hand[: reason]`,
// events meanwhile end failed without an attempt and reach nobody, enabling resumes deliveries, a second
// disable changes nothing, endpoint health neither re-enables it nor replaces its reason, and bad input
// or someone else's id changes nothing.
import t from "tap";
import type { ReceivedRequest } from "../helpers/https-receiver.ts";
import { createTestTenant } from "../helpers/server.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import { DISABLED, MANUALLY_DISABLED, type SubscriptionView } from "../../db/webhooks/views.ts";

const ca = testCa(t);
/** Paths whose endpoint is down (answers 500). */
const down = new Set<string>();
/** Paths whose endpoint takes this long to answer, so an attempt is under way while the test acts. */
const slow = new Map<string, number>();
let rig: WebhookRig;

t.before(async () => {
  rig = await startWebhookRig(t, ca, {
    // One failed delivery disables by endpoint health: the health rule is at its most eager.
    env: { MAX_DELIVERY_ATTEMPTS: "1", WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES: "1" },
    answer: (request: ReceivedRequest) => ({
      status: down.has(request.path) ? 500 : 204,
      delayMs: slow.get(request.path) ?? 0,
    }),
  });
});

interface Attempt {
  attempted_at: string;
  duration_ms: number;
  outcome: string;
}

function disable(id: string, init: { json?: unknown; body?: string; headers?: Record<string, string> } = {}) {
  return rig.server.request(`/v1/webhooks/subscriptions/${id}/disable`, {
    method: "POST",
    token: rig.tenant.token,
    ...init,
  });
}

async function attemptsOf(deliveryId: string): Promise<Attempt[]> {
  const res = await rig.server.request(`/v1/webhooks/deliveries/${deliveryId}`, { token: rig.tenant.token });
  return ((await res.json()) as { attempts: Attempt[] }).attempts;
}

t.test("disabling by hand turns an active subscription disabled, with the time and the reason given", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/by-hand-${crypto.randomUUID()}`));
  const before = Date.now();
  const res = await disable(id, { json: { reason: "  Receiver moves to the new data centre  " } });
  t.equal(res.status, 200);
  const body = (await res.json()) as SubscriptionView & { secret?: unknown };
  t.match(body, {
    id,
    status: "disabled",
    is_active: true,
    disabled_reason: "Disabled by hand: Receiver moves to the new data centre",
  });
  t.ok(body.disabled_at && Date.parse(body.disabled_at) >= before - 1000, "disabled_at is now");
  t.notOk("secret" in body, "no secret in the answer");
  t.same(await rig.subscription(id), body, "the subscription reads back as answered");
  t.match(
    (await rig.subscriptions()).find((subscription) => subscription.id === id),
    { status: "disabled" },
    "still listed, as disabled",
  );
});

t.test("without a reason (no body, an empty object, spaces) the reason is `Disabled by hand`", async (t) => {
  const bodies: [string, { json?: unknown; body?: string; headers?: Record<string, string> }][] = [
    ["no body at all", {}],
    ["an empty JSON body", { body: "", headers: { "Content-Type": "application/json" } }],
    ["an empty object", { json: {} }],
    ["a reason of spaces", { json: { reason: "   " } }],
  ];
  for (const [what, init] of bodies) {
    const { id } = await rig.subscribe(rig.receiver.url(`/no-reason-${crypto.randomUUID()}`));
    const res = await disable(id, init);
    t.equal(res.status, 200, `${what}: 200`);
    t.match(await res.json(), { status: "disabled", disabled_reason: "Disabled by hand" }, what);
  }
});

t.test("an unknown field is refused (422 extra_forbidden), not taken for a disable without reason", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/unknown-field-${crypto.randomUUID()}`));
  const res = await disable(id, { json: { why: "maintenance" } });
  t.equal(res.status, 422);
  t.match(await res.json(), { detail: [{ loc: ["body", "why"], type: "extra_forbidden", input: "maintenance" }] });
  t.match(await rig.subscription(id), { status: "active" }, "still active");
});

t.test(
  "while disabled by hand, an event ends failed without an attempt and nothing reaches the receiver",
  async (t) => {
    const path = `/quiet-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path));
    t.equal((await disable(id)).status, 200);
    await rig.emitIntake();
    const final = await rig.finalDelivery(id);
    t.match(final, { status: "failed", attempts: 0, error_message: MANUALLY_DISABLED.notSent });
    t.same(await attemptsOf(final?.id ?? ""), [], "no attempt was made");
    await rig.jobsDrained();
    t.equal(rig.receiver.receivedAt(path).length, 0, "nothing was sent");
    t.match(
      await rig.subscription(id),
      { status: "disabled", disabled_reason: "Disabled by hand" },
      "and it stays disabled",
    );
  },
);

t.test("enabling it again delivers new events, and what failed meanwhile can be resent", async (t) => {
  const path = `/back-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await disable(id, { json: { reason: "maintenance" } });
  await rig.emitIntake();
  const missed = await rig.finalDelivery(id);
  t.equal(missed?.status, "failed");
  const enabled = await rig.server.request(`/v1/webhooks/subscriptions/${id}/enable`, {
    method: "POST",
    token: rig.tenant.token,
  });
  t.equal(enabled.status, 200);
  t.match(await enabled.json(), { status: "active", disabled_at: null, disabled_reason: null });
  await rig.emitIntake();
  await waitFor(
    async () => rig.receiver.receivedAt(path).length,
    (count) => count === 1,
  );
  t.equal(rig.receiver.receivedAt(path).length, 1, "a new event is delivered");
  const resend = await rig.server.request(`/v1/webhooks/deliveries/${missed?.id ?? ""}/redeliver`, {
    method: "POST",
    token: rig.tenant.token,
  });
  t.equal(resend.status, 202, "the delivery missed while disabled is resent");
  await waitFor(
    async () => rig.receiver.receivedAt(path).length,
    (count) => count === 2,
  );
  t.equal(rig.receiver.receivedAt(path).length, 2, "and arrives");
});

t.test("disabling a disabled subscription answers 200 and keeps the first time and reason", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/twice-${crypto.randomUUID()}`));
  const first = (await (await disable(id, { json: { reason: "first" } })).json()) as SubscriptionView;
  const again = await disable(id, { json: { reason: "second" } });
  t.equal(again.status, 200);
  const second = (await again.json()) as SubscriptionView;
  t.equal(second.disabled_reason, "Disabled by hand: first", "the first reason stays");
  t.equal(second.disabled_at, first.disabled_at, "the first time stays");

  // One disabled by endpoint health keeps its reason too.
  const path = `/health-first-${crypto.randomUUID()}`;
  down.add(path);
  const health = await rig.subscribe(rig.receiver.url(path));
  await rig.emitIntake();
  await rig.finalDelivery(health.id);
  const byHealth = await waitFor(
    () => rig.subscription(health.id),
    (subscription) => subscription.status === "disabled",
  );
  t.equal(byHealth.disabled_reason, "1 deliveries in a row failed");
  const res = await disable(health.id, { json: { reason: "me too" } });
  t.equal(res.status, 200);
  t.match(await res.json(), { disabled_reason: byHealth.disabled_reason, disabled_at: byHealth.disabled_at });
  await rig.emitIntake();
  t.match(
    await waitFor(
      async () => (await rig.deliveries()).filter((delivery) => delivery.subscription_id === health.id),
      (deliveries) => deliveries.length === 2 && deliveries.every((delivery) => delivery.status !== "pending"),
    ),
    [{ error_message: DISABLED.notSent }, {}],
    "its deliveries still name endpoint health",
  );
});

t.test(
  "an attempt under way when it is disabled by hand finishes, and its success does not re-enable it",
  async (t) => {
    const path = `/in-flight-ok-${crypto.randomUUID()}`;
    slow.set(path, 3000);
    const { id } = await rig.subscribe(rig.receiver.url(path));
    await rig.emitIntake();
    await waitFor(
      async () => rig.receiver.receivedAt(path).length,
      (count) => count === 1,
    );
    const disabled = (await (await disable(id, { json: { reason: "while sending" } })).json()) as SubscriptionView;
    const final = await rig.finalDelivery(id);
    t.equal(final?.status, "delivered", "the attempt under way finished and is recorded");
    const [attempt] = await attemptsOf(final?.id ?? "");
    t.ok(
      attempt && Date.parse(attempt.attempted_at) + attempt.duration_ms > Date.parse(disabled.disabled_at ?? ""),
      "it was disabled while the attempt was under way",
    );
    t.match(
      await rig.subscription(id),
      { status: "disabled", disabled_at: disabled.disabled_at, disabled_reason: "Disabled by hand: while sending" },
      "a delivered attempt does not re-enable it",
    );
  },
);

t.test("endpoint health does not replace the time or reason of a subscription disabled by hand", async (t) => {
  const path = `/in-flight-fail-${crypto.randomUUID()}`;
  slow.set(path, 3000);
  down.add(path);
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await rig.emitIntake();
  await waitFor(
    async () => rig.receiver.receivedAt(path).length,
    (count) => count === 1,
  );
  const disabled = (await (await disable(id, { json: { reason: "before health" } })).json()) as SubscriptionView;
  const final = await rig.finalDelivery(id);
  t.equal(final?.status, "failed", "the attempt under way failed: one failed delivery meets the health rule");
  t.equal((await attemptsOf(final?.id ?? "")).length, 1, "it was really attempted");
  t.match(await rig.subscription(id), {
    status: "disabled",
    disabled_at: disabled.disabled_at,
    disabled_reason: "Disabled by hand: before health",
  });
  await rig.emitIntake();
  t.match(
    await waitFor(
      async () => (await rig.deliveries()).filter((delivery) => delivery.subscription_id === id),
      (deliveries) => deliveries.length === 2 && deliveries.every((delivery) => delivery.status !== "pending"),
    ),
    [{ status: "failed", attempts: 0, error_message: MANUALLY_DISABLED.notSent }, {}],
    "later events still name the hand",
  );
});

t.test("deleted, unknown, malformed and another tenant's ids answer 404 and change nothing", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/mine-${crypto.randomUUID()}`));
  const stranger = await createTestTenant(rig.server.services);
  const deleted = (await rig.subscribe(rig.receiver.url(`/deleted-${crypto.randomUUID()}`))).id;
  await rig.server.request(`/v1/webhooks/subscriptions/${deleted}`, { method: "DELETE", token: rig.tenant.token });
  for (const [target, token] of [
    [id, stranger.token],
    [crypto.randomUUID(), rig.tenant.token],
    ["not-a-uuid", rig.tenant.token],
    [deleted, rig.tenant.token],
  ] as const) {
    const res = await rig.server.request(`/v1/webhooks/subscriptions/${target}/disable`, {
      method: "POST",
      token,
      json: { reason: "not yours" },
    });
    t.equal(res.status, 404, `disable ${target}`);
    t.equal(((await res.json()) as { error: { code: string } }).error.code, "NOT_FOUND");
  }
  t.match(await rig.subscription(id), { status: "active", disabled_at: null, disabled_reason: null }, "still active");
  const gone = await rig.server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: rig.tenant.tenantId, id: deleted })
    .first("disabled_at");
  t.equal(gone?.disabled_at, null, "the deleted one was not disabled either");
});

t.test("a bad body answers 422 in FastAPI's shape (415 for another media type) and changes nothing", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/bad-body-${crypto.randomUUID()}`));
  const cases: [string, { json?: unknown; body?: string; headers?: Record<string, string> }, number, unknown][] = [
    [
      "a reason of 201 characters",
      { json: { reason: "x".repeat(201) } },
      422,
      {
        loc: ["body", "reason"],
        type: "string_too_long",
        ctx: { max_length: 200 },
      },
    ],
    ["an empty reason", { json: { reason: "" } }, 422, { loc: ["body", "reason"], type: "string_too_short" }],
    ["a reason that is a number", { json: { reason: 7 } }, 422, { loc: ["body", "reason"], type: "string_type" }],
    [
      "a reason with a line break",
      { json: { reason: "two\nlines" } },
      422,
      {
        loc: ["body", "reason"],
        type: "string_pattern_mismatch",
        msg: /^String should match pattern /,
        input: "two\nlines",
      },
    ],
    [
      "a reason with a bidi control",
      { json: { reason: "abc\u202edef" } },
      422,
      {
        loc: ["body", "reason"],
        type: "string_pattern_mismatch",
      },
    ],
    ["an array body", { json: ["reason"] }, 422, { loc: ["body"], type: "dict_type" }],
    ["a JSON null body", { json: null }, 422, { loc: ["body"] }],
    [
      "malformed JSON",
      { body: '{"reason":', headers: { "Content-Type": "application/json" } },
      422,
      {
        type: "json_invalid",
      },
    ],
  ];
  for (const [what, init, status, issue] of cases) {
    const res = await disable(id, init);
    t.equal(res.status, status, `${what}: ${status}`);
    const body = (await res.json()) as { detail?: unknown[] };
    t.ok(Array.isArray(body.detail), `${what}: FastAPI's {detail: [...]}`);
    t.match(body.detail?.[0], issue, what);
  }
  const text = await disable(id, { body: "reason=x", headers: { "Content-Type": "text/plain" } });
  t.equal(text.status, 415, "text/plain: 415");
  t.match(await text.json(), { error: { code: "UNSUPPORTED_MEDIA_TYPE" } });
  t.match(
    await rig.subscription(id),
    { status: "active", disabled_at: null, disabled_reason: null },
    "nothing changed",
  );
});

t.test("without a token it is 401, with a token without an admin role 403", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/auth-${crypto.randomUUID()}`));
  const anonymous = await rig.server.request(`/v1/webhooks/subscriptions/${id}/disable`, { method: "POST" });
  t.equal(anonymous.status, 401);
  const viewer = await createTestTenant(rig.server.services, ["viewer"]);
  const forbidden = await rig.server.request(`/v1/webhooks/subscriptions/${id}/disable`, {
    method: "POST",
    token: viewer.token,
  });
  t.equal(forbidden.status, 403);
  t.match(await rig.subscription(id), { status: "active" });
});
