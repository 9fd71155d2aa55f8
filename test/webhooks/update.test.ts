// Changing a subscription in place (updateWebhookSubscription, PATCH /v1/webhooks/subscriptions/{id}):
// merge-patch fields (absent unchanged, description null clears), the create path's URL and events rules
// with the same answers, 404 for what the tenant cannot see, the audit action, and what the change does
// to events emitted afterwards and to deliveries already queued.
import net from "node:net";
import t from "tap";
import type { Test } from "tap";
import { emitEvent } from "../../db/events.ts";
import { listAudit } from "../../db/audit.ts";
import { startWorker } from "../../worker/runner.ts";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";
import { intakeEventData, jobsOfDelivery, startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";

const VALID_URL = "https://hooks.example.com/review";
const freshUrl = (): string => `${VALID_URL}/${crypto.randomUUID()}`;

interface Subscription {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  status: string;
  disabled_at: string | null;
  disabled_reason: string | null;
  created_at: string;
  created_by: string;
  secret?: string;
}

let server: TestServer;
let tenant: TestTenant;

t.before(async () => {
  server = await startTestServer(t, { env: { WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT: "10000" } });
  tenant = await createTestTenant(server.services);
});

function create(body: unknown, who: TestTenant = tenant): Promise<Response> {
  return server.request("/v1/webhooks/subscriptions", { method: "POST", token: who.token, json: body });
}

async function created(body: Record<string, unknown> = {}, who: TestTenant = tenant): Promise<Subscription> {
  const res = await create({ url: freshUrl(), events: ["intake.submitted"], ...body }, who);
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Subscription;
}

function patch(id: string, body: unknown, options: { token?: string; contentType?: string } = {}): Promise<Response> {
  return server.request(`/v1/webhooks/subscriptions/${id}`, {
    method: "PATCH",
    token: options.token ?? tenant.token,
    json: body,
    ...(options.contentType ? { headers: { "Content-Type": options.contentType } } : {}),
  });
}

async function read(id: string, who: TestTenant = tenant): Promise<Subscription> {
  const res = await server.request(`/v1/webhooks/subscriptions/${id}`, { token: who.token });
  if (res.status !== 200) throw new Error(`get answered ${res.status}`);
  return (await res.json()) as Subscription;
}

/** The answer without what differs between any two requests (the request id). */
async function answerOf(res: Response): Promise<{ status: number; body: unknown }> {
  const body = (await res.json()) as Record<string, unknown>;
  delete body.request_id;
  return { status: res.status, body };
}

t.test("each field changes on its own and the others stay as they were; 200 with the subscription", async (t) => {
  const before = await created({ description: "first" });
  const { secret: _secret, ...shown } = before;
  void _secret;

  const url = freshUrl();
  const moved = await patch(before.id, { url });
  t.equal(moved.status, 200);
  const afterUrl = (await moved.json()) as Subscription;
  t.same(afterUrl, { ...shown, url }, "only the url changed");
  t.notOk("secret" in afterUrl, "no secret in the answer");

  const regrouped = await patch(before.id, { events: ["intake.batch_submitted", "document.uploaded"] });
  t.equal(regrouped.status, 200);
  t.same(await regrouped.json(), { ...shown, url, events: ["intake.batch_submitted", "document.uploaded"] });

  const described = await patch(before.id, { description: "Claims intake for the review team" });
  t.equal(described.status, 200);
  const expected = {
    ...shown,
    url,
    events: ["intake.batch_submitted", "document.uploaded"],
    description: "Claims intake for the review team",
  };
  t.same(await described.json(), expected);
  t.same(await read(before.id), expected, "GET shows it");
  const listed = await server.request("/v1/webhooks/subscriptions", { token: tenant.token });
  const { subscriptions } = (await listed.json()) as { subscriptions: Subscription[] };
  t.same(
    subscriptions.find((subscription) => subscription.id === before.id),
    expected,
    "the list shows it",
  );
});

t.test("several fields change in one request", async (t) => {
  const before = await created();
  const url = freshUrl();
  const res = await patch(before.id, { url, events: ["*"], description: "all of it" });
  t.equal(res.status, 200);
  const after = (await res.json()) as Subscription;
  t.same([after.url, after.events, after.description], [url, ["*"], "all of it"]);
});

t.test("description: null clears it; an absent description is left as it is", async (t) => {
  const before = await created({ description: "to be cleared" });
  t.equal(before.description, "to be cleared", "create stores the description");
  await patch(before.id, { events: ["*"] });
  t.equal((await read(before.id)).description, "to be cleared", "absent: unchanged");
  const cleared = await patch(before.id, { description: null });
  t.equal(cleared.status, 200);
  t.equal(((await cleared.json()) as Subscription).description, null);
  t.equal((await read(before.id)).description, null, "GET shows none");
});

t.test("a subscription created without a description shows description: null", async (t) => {
  const subscription = await created();
  t.equal(subscription.description, null);
  t.equal((await read(subscription.id)).description, null);
});

t.test("application/merge-patch+json is accepted like application/json", async (t) => {
  const before = await created();
  const res = await patch(before.id, { description: "merge patch" }, { contentType: "application/merge-patch+json" });
  t.equal(res.status, 200);
  t.equal((await read(before.id)).description, "merge patch");
});

t.test("the url is stored in its canonical spelling, as at creation", async (t) => {
  const before = await created();
  const res = await patch(before.id, { url: "https://Hooks.Example.com.:443/./in/%62ox?" });
  t.equal(res.status, 200);
  t.equal(((await res.json()) as Subscription).url, "https://hooks.example.com/in/box");
});

/** Expects PATCH to answer exactly what create answers for this url, and the subscription to stay as it was. */
async function expectRefusedLikeCreate(t: Test, url: string, status: number): Promise<void> {
  const subscription = await created();
  const before = await read(subscription.id);
  const patched = await answerOf(await patch(subscription.id, { url }));
  const creating = await answerOf(await create({ url, events: ["intake.submitted"] }));
  t.equal(patched.status, status, `${url}: ${status}`);
  t.same(patched, creating, `${url}: the same answer as create`);
  t.same(await read(subscription.id), before, `${url}: nothing changed`);
}

t.test("url rule: an http URL is refused with create's answer and nothing changes", async (t) => {
  await expectRefusedLikeCreate(t, "http://hooks.example.com/plain", 422);
});

t.test("url rule: a private or loopback address is refused with create's answer", async (t) => {
  for (const url of ["https://10.0.0.7/hook", "https://127.1/hook", "https://[::ffff:192.168.0.1]/hook"])
    await expectRefusedLikeCreate(t, url, 422);
});

t.test("url rule: a fragment is refused with create's answer", async (t) => {
  await expectRefusedLikeCreate(t, "https://hooks.example.com/in#part", 422);
});

t.test("url rule: another subscription's URL is 409 WEBHOOK_SUBSCRIPTION_DUPLICATE_URL, as at creation", async (t) => {
  const taken = await created();
  const subscription = await created();
  const before = await read(subscription.id);
  // Another spelling of the same URL is the same URL.
  const res = await patch(subscription.id, { url: taken.url.replace("hooks.example.com", "HOOKS.example.com.") });
  t.equal(res.status, 409);
  const patched = await answerOf(res);
  t.same(patched.body, {
    error: {
      code: "WEBHOOK_SUBSCRIPTION_DUPLICATE_URL",
      message: "A webhook subscription with this URL already exists",
      details: { subscription_id: taken.id },
    },
  });
  t.same(patched, await answerOf(await create({ url: taken.url, events: ["*"] })), "create's answer");
  t.same(await read(subscription.id), before, "nothing changed");
});

t.test("its own URL is no conflict, and a deleted subscription's URL is free", async (t) => {
  const subscription = await created();
  const same = await patch(subscription.id, { url: subscription.url, description: "same place" });
  t.equal(same.status, 200);
  const gone = await created();
  t.equal(
    (await server.request(`/v1/webhooks/subscriptions/${gone.id}`, { method: "DELETE", token: tenant.token })).status,
    204,
  );
  const takeOver = await patch(subscription.id, { url: gone.url });
  t.equal(takeOver.status, 200);
  t.equal((await read(subscription.id)).url, gone.url);
});

t.test("another tenant's URL is no conflict", async (t) => {
  const other = await createTestTenant(server.services);
  const theirs = await created({}, other);
  const mine = await created();
  t.equal((await patch(mine.id, { url: theirs.url })).status, 200);
});

t.test("events rules: as at creation (known kinds or *, 1 to 20, duplicates removed)", async (t) => {
  const subscription = await created();
  const before = await read(subscription.id);
  for (const events of [[], ["intake.unknown"], Array(21).fill("*"), "intake.submitted", [7]]) {
    const patched = await answerOf(await patch(subscription.id, { events }));
    const creating = await answerOf(await create({ url: freshUrl(), events }));
    t.equal(patched.status, 422, `${JSON.stringify(events)}: 422`);
    t.same(patched, creating, `${JSON.stringify(events)}: the same answer as create`);
  }
  t.same(await read(subscription.id), before, "nothing changed");
  const deduplicated = await patch(subscription.id, {
    events: ["document.uploaded", "intake.submitted", "document.uploaded"],
  });
  t.same(((await deduplicated.json()) as Subscription).events, ["document.uploaded", "intake.submitted"]);
});

t.test("description rules: 1 to 500 characters, one line without control or format characters", async (t) => {
  const subscription = await created({ description: "kept" });
  const refused: [unknown, string][] = [
    ["", "string_too_short"],
    ["x".repeat(501), "string_too_long"],
    ["two\nlines", "string_pattern_mismatch"],
    ["tab\there", "string_pattern_mismatch"],
    ["bidi \u202e override", "string_pattern_mismatch"],
    ["zero\u200bwidth", "string_pattern_mismatch"],
    [42, "string_type"],
  ];
  for (const [description, type] of refused) {
    const res = await patch(subscription.id, { description });
    t.equal(res.status, 422, `${JSON.stringify(description)}: 422`);
    const body = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    t.same(
      body.detail.map((issue) => [issue.loc, issue.type]),
      [[["body", "description"], type]],
      `${JSON.stringify(description)}: ${type}`,
    );
    const creating = await create({ url: freshUrl(), events: ["*"], description });
    t.equal(creating.status, 422, `${JSON.stringify(description)}: refused at creation too`);
  }
  t.equal((await read(subscription.id)).description, "kept", "nothing changed");
  const longest = "é".repeat(500);
  t.equal((await patch(subscription.id, { description: longest })).status, 200, "500 characters are accepted");
  t.equal((await read(subscription.id)).description, longest);
});

t.test("an empty body, an unknown property, a secret or status is 422, nothing changed", async (t) => {
  const subscription = await created({ description: "kept" });
  const before = await read(subscription.id);
  const empty = await patch(subscription.id, {});
  t.equal(empty.status, 422, "empty object");
  const emptyBody = (await empty.json()) as { detail: { loc: unknown[]; type: string }[] };
  t.same(
    emptyBody.detail.map((issue) => [issue.loc, issue.type]),
    [[["body"], "value_error"]],
  );
  for (const field of ["unknown", "secret", "status", "is_active", "id"]) {
    const res = await patch(subscription.id, { description: "changed", [field]: "x" });
    t.equal(res.status, 422, `${field}: 422`);
    const body = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    t.same(
      body.detail.map((issue) => [issue.loc, issue.type]),
      [[["body", field], "extra_forbidden"]],
      `${field}: extra_forbidden`,
    );
  }
  const notAnObject = await patch(subscription.id, ["url"]);
  t.equal(notAnObject.status, 422, "an array is no patch");
  t.same(await read(subscription.id), before, "nothing changed");
});

t.test("a PATCH without any body (no Content-Length, as curl -X PATCH sends it) is 422 missing at body", async (t) => {
  const subscription = await created({ description: "kept" });
  const before = await read(subscription.id);
  // fetch and node:http always send a length or chunks; this request has neither.
  const head = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(new URL(server.baseUrl).port), "127.0.0.1", () =>
      socket.write(
        `PATCH /v1/webhooks/subscriptions/${subscription.id} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
          `Authorization: Bearer ${tenant.token}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n`,
      ),
    );
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
  t.match(head, /^HTTP\/1\.1 422 /, "422");
  t.same(JSON.parse(head.slice(head.indexOf("\r\n\r\n") + 4)), {
    detail: [{ loc: ["body"], msg: "Field required", type: "missing" }],
  });
  t.same(await read(subscription.id), before, "nothing changed");
  t.same(server.errors.map(String), [], "no unexpected error");
});

t.test("another tenant's subscription, a deleted one, an unknown id and a non-UUID answer the same 404", async (t) => {
  const other = await createTestTenant(server.services);
  const theirs = await created({ description: "theirs" }, other);
  const deleted = await created();
  await server.request(`/v1/webhooks/subscriptions/${deleted.id}`, { method: "DELETE", token: tenant.token });
  const missing = await answerOf(await patch(crypto.randomUUID(), { description: "x" }));
  t.same(missing, {
    status: 404,
    body: { error: { code: "NOT_FOUND", message: "Webhook subscription not found" } },
  });
  t.same(await answerOf(await patch(theirs.id, { description: "x" })), missing, "another tenant's");
  t.same(await answerOf(await patch(deleted.id, { description: "x" })), missing, "a deleted one");
  t.same(await answerOf(await patch("not-a-uuid", { description: "x" })), missing, "not a UUID");
  t.equal((await read(theirs.id, other)).description, "theirs", "theirs unchanged");
  t.same(await listAudit(server.services.db, other.tenantId, "webhooks.subscription_updated"), [], "no audit");
});

t.test("without a token 401; a token without the role 403", async (t) => {
  const subscription = await created();
  const anonymous = await server.request(`/v1/webhooks/subscriptions/${subscription.id}`, {
    method: "PATCH",
    json: { description: "x" },
  });
  t.equal(anonymous.status, 401);
  const viewer = await createTestTenant(server.services, ["viewer"]);
  t.equal((await patch(subscription.id, { description: "x" }, { token: viewer.token })).status, 403);
});

t.test("a disabled subscription stays disabled, with its time and reason; the secret is unchanged", async (t) => {
  const subscription = await created();
  const disabled = await server.request(`/v1/webhooks/subscriptions/${subscription.id}/disable`, {
    method: "POST",
    token: tenant.token,
    json: { reason: "moving" },
  });
  t.equal(disabled.status, 200);
  const before = await read(subscription.id);
  const sealed = async () =>
    (
      await server.services
        .db("integrator.webhook_subscriptions")
        .where({ tenant_id: tenant.tenantId, id: subscription.id })
        .first("secret_encrypted")
    ).secret_encrypted as string;
  const secretBefore = await sealed();
  const url = freshUrl();
  const res = await patch(subscription.id, { url });
  t.equal(res.status, 200);
  t.same(await res.json(), { ...before, url });
  t.equal(before.status, "disabled");
  t.equal(await sealed(), secretBefore, "the same sealed secret");
  t.equal(server.services.secretBox.open(await sealed()), subscription.secret, "which opens to the one shown");
});

t.test("the change is audited with the actor and the fields that changed, in its transaction", async (t) => {
  const who = await createTestTenant(server.services);
  const subscription = await created({ description: "before" }, who);
  const url = freshUrl();
  t.equal((await patch(subscription.id, { url, description: null }, { token: who.token })).status, 200);
  const link = await server.request("/v1/webhooks/portal-sessions", { method: "POST", token: who.token });
  t.equal(link.status, 201);
  const portalToken = new URL(((await link.json()) as { url: string }).url).hash.replace(/^#token=/, "");
  const viaPortal = await patch(subscription.id, { events: ["*"] }, { token: portalToken });
  t.equal(viaPortal.status, 200, "a portal credential may change a subscription, as it may create one");
  // Refusals record nothing.
  await patch(subscription.id, { url: "http://hooks.example.com/" }, { token: who.token });
  await patch(crypto.randomUUID(), { description: "x" }, { token: who.token });

  const trail = (await listAudit(server.services.db, who.tenantId, "webhooks.subscription_updated")).map((entry) => ({
    actor: entry.actor,
    resource_type: entry.resource_type,
    resource_id: entry.resource_id,
    details: entry.details,
    request_id: typeof entry.request_id,
  }));
  t.same(trail, [
    {
      actor: who.subject,
      resource_type: "webhook_subscription",
      resource_id: subscription.id,
      details: {
        changed: ["url", "description"],
        url: { from: subscription.url, to: url },
        description: { from: "before", to: null },
      },
      request_id: "string",
    },
    {
      actor: `portal:${who.subject}`,
      resource_type: "webhook_subscription",
      resource_id: subscription.id,
      details: { changed: ["events"], events: { from: ["intake.submitted"], to: ["*"] } },
      request_id: "string",
    },
  ]);
  t.notMatch(JSON.stringify(trail), /whsec_/, "no secret in the trail");
});

t.test(
  "after changing events, a new event of an added kind is delivered and one of a removed kind is not",
  async (t) => {
    const who = await createTestTenant(server.services);
    const subscription = await created({ events: ["intake.submitted"] }, who);
    const deliveriesOf = async () => {
      const res = await server.request(`/v1/webhooks/deliveries?subscription_id=${subscription.id}`, {
        token: who.token,
      });
      return ((await res.json()) as { deliveries: { event_type: string }[] }).deliveries.map(
        (delivery) => delivery.event_type,
      );
    };
    await emitEvent(server.services.db, who.tenantId, "intake.submitted", intakeEventData());
    t.same(await deliveriesOf(), ["intake.submitted"], "before the change: the subscribed kind");
    t.equal((await patch(subscription.id, { events: ["intake.batch_submitted"] }, { token: who.token })).status, 200);
    t.equal(
      await emitEvent(server.services.db, who.tenantId, "intake.submitted", intakeEventData()),
      0,
      "the removed kind queues no delivery",
    );
    t.equal(
      await emitEvent(server.services.db, who.tenantId, "intake.batch_submitted", intakeEventData()),
      1,
      "the added kind queues one",
    );
    t.same(await deliveriesOf(), ["intake.batch_submitted", "intake.submitted"], "newest first");
  },
);

t.test("deliveries already queued are sent to the new URL, retries included", async (t) => {
  const ca = testCa(t);
  // Retries an hour apart: the test makes the retry due itself, after the change.
  const rig = await startWebhookRig(t, ca, {
    worker: false,
    env: { WEBHOOK_RETRY_SCHEDULE: "1h", MAX_DELIVERY_ATTEMPTS: "3" },
    answer: (request) => (request.path.startsWith("/old") ? { status: 503 } : { status: 204 }),
  });
  const oldPath = `/old-${crypto.randomUUID()}`;
  const newPath = `/new-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(oldPath), ["intake.submitted"]);
  const change = (url: string) =>
    rig.server.request(`/v1/webhooks/subscriptions/${id}`, { method: "PATCH", token: rig.tenant.token, json: { url } });

  // One delivery attempted once (503 at the old URL) and waiting for its retry, one not yet attempted.
  await rig.emitIntake();
  const worker = await startWorker(rig.server.services, rig.server.databaseUrl, { pollInterval: 200 });
  t.teardown(() => worker.stop());
  const [retrying] = await waitFor(
    async () => (await rig.deliveries()).filter((delivery) => delivery.attempts === 1 && delivery.status === "pending"),
    (found) => found.length === 1,
  );
  if (!retrying) return t.fail("no delivery waiting for its retry");
  await worker.stop();
  await rig.emitIntake();
  const queued = (await rig.deliveries()).find((delivery) => delivery.attempts === 0);
  if (!queued) return t.fail("no queued delivery");

  t.equal((await change(rig.receiver.url(newPath))).status, 200);
  const [job] = await jobsOfDelivery(rig.server.services.db, retrying.id);
  if (!job) return t.fail("the retry has no job");
  await rig.server.services.db.raw("select graphile_worker.reschedule_jobs(array[?]::bigint[], run_at => now())", [
    job.id,
  ]);
  const restarted = await startWorker(rig.server.services, rig.server.databaseUrl, { pollInterval: 200 });
  t.teardown(() => restarted.stop());
  const final = await waitFor(
    () => rig.deliveries(),
    (deliveries) => deliveries.every((delivery) => delivery.status === "delivered"),
  );
  t.same(
    final.map((delivery) => [delivery.id, delivery.status]).sort(),
    [
      [queued.id, "delivered"],
      [retrying.id, "delivered"],
    ].sort(),
  );
  t.equal(rig.receiver.receivedAt(oldPath).length, 1, "the old URL got the first attempt only");
  t.equal(rig.receiver.receivedAt(newPath).length, 2, "the new URL got the retry and the queued delivery");
  const sentEvents = rig.receiver
    .receivedAt(newPath)
    .map((request) => (JSON.parse(request.rawBody.toString()) as { id: string }).id);
  t.same(
    sentEvents.sort(),
    [retrying.event_id, queued.event_id].sort(),
    "the retry carries the same event, the queued delivery its own",
  );
});
