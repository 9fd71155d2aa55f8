// Webhook subscriptions and the delivery log through the API (docs/decisions.md §5): the URL rules, events,
// the secret returned once and stored sealed, listing, deactivation and tenant isolation.
import t from "tap";
import type { Test } from "tap";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";
import { emitEvent, EVENT_KINDS } from "../../db/events.ts";
import { intakeEventData } from "../helpers/webhooks.ts";

const RFC3339_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const VALID_URL = "https://hooks.example.com/review";
/** A URL no other subscription of the test tenants has (one active subscription per URL and tenant). */
const freshUrl = (): string => `${VALID_URL}/${crypto.randomUUID()}`;

let server: TestServer;
let tenant: TestTenant;

t.before(async () => {
  server = await startTestServer(t, { env: { WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT: "10000" } });
  tenant = await createTestTenant(server.services);
});

async function subscribe(body: unknown, who: TestTenant = tenant): Promise<Response> {
  return server.request("/v1/webhooks/subscriptions", { method: "POST", token: who.token, json: body });
}

async function subscribed(
  url: string,
  events: string[],
  who: TestTenant = tenant,
): Promise<{ id: string; secret: string }> {
  const res = await subscribe({ url, events }, who);
  if (res.status !== 201) throw new Error(`subscribe answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { id: string; secret: string };
}

async function listSubscriptions(
  who: TestTenant = tenant,
): Promise<{ subscriptions: Record<string, unknown>[]; total: number }> {
  const res = await server.request("/v1/webhooks/subscriptions", { token: who.token });
  if (res.status !== 200) throw new Error(`list answered ${res.status}`);
  return (await res.json()) as { subscriptions: Record<string, unknown>[]; total: number };
}

/** Expects the URL to be refused with exactly one value_error at ["body","url"] whose msg names the rule. */
async function expectUrlRefused(t: Test, url: string, rule: RegExp): Promise<void> {
  const res = await subscribe({ url, events: ["*"] });
  t.equal(res.status, 422, `${url} is refused`);
  const body = (await res.json()) as { detail: { loc: unknown[]; type: string; msg: string; input: unknown }[] };
  t.equal(body.detail.length, 1, `${url}: one issue`);
  const [issue] = body.detail;
  t.same(issue?.loc, ["body", "url"], `${url}: at body.url`);
  t.equal(issue?.type, "value_error", `${url}: value_error`);
  t.match(issue?.msg, rule, `${url}: the msg names the rule`);
  t.equal(issue?.input, url, `${url}: the input is echoed`);
}

const intakeData = () => intakeEventData({ external_reference: "order-4711" });

t.test(
  "creating a subscription answers 201 with the secret, whsec_ and 32 random bytes in standard base64, this once",
  async (t) => {
    const url = freshUrl();
    const res = await subscribe({ url, events: ["intake.submitted", "intake.batch_submitted"] });
    t.equal(res.status, 201);
    const body = await res.json();
    t.match(body.id, UUID);
    t.equal(body.tenant_id, tenant.tenantId);
    t.equal(body.url, url);
    t.same(body.events, ["intake.submitted", "intake.batch_submitted"]);
    t.equal(body.is_active, true);
    t.equal(body.created_by, tenant.subject, "created_by is the token's subject");
    t.match(body.created_at, RFC3339_MS_Z);
    t.match(body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    t.equal(Buffer.from(body.secret.slice("whsec_".length), "base64").length, 32);
    const again = await (await subscribe({ url: freshUrl(), events: ["*"] })).json();
    t.not(again.secret, body.secret, "every subscription has its own secret");
  },
);

t.test("the secret is stored sealed: the database column holds neither the secret nor its random part", async (t) => {
  const { id, secret } = await subscribed(freshUrl(), ["*"]);
  const row = await server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenant.tenantId, id })
    .first();
  t.notOk(JSON.stringify(row).includes(secret.slice("whsec_".length)), "no column holds the secret");
  t.equal(server.services.secretBox.open(row.secret_encrypted), secret, "it opens with the service key");
});

t.test("the secret is never listed", async (t) => {
  await subscribed(freshUrl(), ["*"]);
  const listed = await listSubscriptions();
  t.ok(listed.subscriptions.length > 0);
  for (const subscription of listed.subscriptions) t.notOk("secret" in subscription, "no secret field");
  t.notMatch(JSON.stringify(listed), /whsec_/);
});

t.test("url rule: it must be a parseable absolute URL", async (t) => {
  for (const url of ["not a url", "/relative/path", "hooks.example.com/x", "https://"])
    await expectUrlRefused(t, url, /valid absolute URL/);
});

t.test("url rule: the scheme must be https", async (t) => {
  for (const url of ["http://hooks.example.com/x", "ftp://hooks.example.com/", "wss://hooks.example.com/"])
    await expectUrlRefused(t, url, /scheme must be https/);
});

t.test("url rule: no user name or password part", async (t) => {
  for (const url of [
    "https://user@hooks.example.com/x",
    "https://user:secret@hooks.example.com/x",
    "https://:secret@hooks.example.com/",
  ]) {
    await expectUrlRefused(t, url, /must not contain a user name or password/);
  }
});

t.test(
  "url rule: private, loopback, link-local, shared, multicast, unspecified, documentation and reserved IPv4 literals are refused",
  async (t) => {
    const literals = [
      "10.0.0.1",
      "172.16.5.4",
      "192.168.1.1",
      "127.0.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "192.0.2.1",
      "198.51.100.7",
      "203.0.113.9",
      "240.0.0.1",
      "255.255.255.255",
    ];
    for (const literal of literals)
      await expectUrlRefused(t, `https://${literal}/x`, /private, loopback, link-local, multicast or reserved IP/);
  },
);

t.test("url rule: private and reserved IPv6 literals are refused, IPv4-mapped addresses included", async (t) => {
  const literals = [
    "[::1]",
    "[::]",
    "[fe80::1]",
    "[fc00::1]",
    "[fd12:3456::1]",
    "[ff02::1]",
    "[2001:db8::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:a00:1]",
    "[64:ff9b::a00:1]",
  ];
  for (const literal of literals)
    await expectUrlRefused(t, `https://${literal}:8443/x`, /private, loopback, link-local, multicast or reserved IP/);
});

t.test(
  "url rule: literal forms that URL parsing normalises to a blocked address are refused (127.1, hex, octal, integer, full-width)",
  async (t) => {
    for (const host of [
      "127.1",
      "0x7f.1",
      "0x7f000001",
      "2130706433",
      "0177.0.0.1",
      "１２７.０.０.１",
      "10.1",
      "127.0.0.1.",
    ]) {
      await expectUrlRefused(t, `https://${host}/x`, /private, loopback, link-local, multicast or reserved IP/);
    }
  },
);

t.test("url rule: localhost names are refused", async (t) => {
  for (const url of ["https://localhost/x", "https://api.localhost/x"]) await expectUrlRefused(t, url, /localhost/);
});

t.test("url rule: the host must be a fully qualified name (contain a dot)", async (t) => {
  for (const url of ["https://intranet/x", "https://hooks:443/x"])
    await expectUrlRefused(t, url, /fully qualified domain name \(contain a dot\)/);
});

t.test("url rules are checked in order and the first broken one is reported", async (t) => {
  await expectUrlRefused(t, "http://user@10.0.0.1/", /scheme must be https/);
  await expectUrlRefused(t, "https://user@10.0.0.1/", /user name or password/);
  await expectUrlRefused(t, "https://10.0.0.1/", /private/);
});

t.test("url: fully qualified names and public IPv4 and IPv6 literals are accepted", async (t) => {
  for (const url of [
    "https://hooks.example.com/review",
    "https://hooks.example.com:443/a?b=c",
    "https://93.184.216.34/x",
    "https://[2001:4860:4860::8888]/hook",
    "https://[2606:4700:4700::1111]:443/x",
  ]) {
    t.equal((await subscribe({ url, events: ["*"] }, await createTestTenant(server.services))).status, 201, url);
  }
});

t.test(
  "url rule: the port must be one of WEBHOOK_ALLOWED_PORTS (default 443), port 0 never: 422 value_error at body.url",
  async (t) => {
    for (const url of [
      "https://hooks.example.com:8443/a",
      "https://hooks.example.com:22/",
      "https://hooks.example.com:0/",
      "https://93.184.216.34:25/x",
      "https://[2001:4860:4860::8888]:8080/hook",
    ])
      await expectUrlRefused(t, url, /URL port must be 443$/);
    const wide = await startTestServer(t, { env: { WEBHOOK_ALLOWED_PORTS: "443,8443,1024-65535" } });
    const tenant = await createTestTenant(wide.services);
    const create = (url: string) =>
      wide.request("/v1/webhooks/subscriptions", { method: "POST", token: tenant.token, json: { url, events: ["*"] } });
    t.equal((await create("https://hooks.example.com:8443/a")).status, 201);
    t.equal((await create("https://hooks.example.com:40000/a")).status, 201);
    const refused = await create("https://hooks.example.com:22/a");
    t.equal(refused.status, 422);
    const body = (await refused.json()) as { detail: { loc: unknown[]; type: string; msg: string }[] };
    t.match(body.detail[0], {
      loc: ["body", "url"],
      type: "value_error",
      msg: /URL port must be 443, 8443 or 1024-65535/,
    });
    t.equal((await create("https://hooks.example.com:0/a")).status, 422, "port 0 never");
  },
);

t.test("url: 1 to 2048 characters", async (t) => {
  const empty = await (await subscribe({ url: "", events: ["*"] })).json();
  t.equal(empty.detail[0].type, "string_too_short");
  const long = await (await subscribe({ url: `https://hooks.example.com/${"a".repeat(2048)}`, events: ["*"] })).json();
  t.equal(long.detail[0].type, "string_too_long");
  t.same(long.detail[0].loc, ["body", "url"]);
});

t.test("events: 1 to 20 entries", async (t) => {
  const none = await subscribe({ url: freshUrl(), events: [] });
  t.equal(none.status, 422);
  const noneBody = await none.json();
  t.same(noneBody.detail[0].loc, ["body", "events"]);
  t.equal(noneBody.detail[0].type, "too_short");
  const many = await (await subscribe({ url: freshUrl(), events: Array(21).fill("*") })).json();
  t.equal(many.detail[0].type, "too_long");
  t.equal(
    (await subscribe({ url: freshUrl(), events: Array(20).fill("intake.submitted") })).status,
    201,
    "20 entries are accepted",
  );
  const missing = await (await subscribe({ url: VALID_URL })).json();
  t.equal(missing.detail[0].type, "missing");
});

t.test("events: each entry is a listed kind or *", async (t) => {
  const res = await subscribe({ url: freshUrl(), events: ["intake.submitted", "intake.deleted", 7] });
  t.equal(res.status, 422);
  const body = await res.json();
  const locs = body.detail.map((issue: { loc: unknown[] }) => issue.loc);
  t.same(locs.slice(0, 2), [
    ["body", "events", 1],
    ["body", "events", 2],
  ]);
  t.equal(body.detail[0].type, "enum");
  for (const kind of [...EVENT_KINDS, "*"]) {
    t.equal((await subscribe({ url: freshUrl(), events: [kind] })).status, 201, kind);
  }
});

t.test("events: duplicates are removed and the order given is kept", async (t) => {
  const body = await (
    await subscribe({
      url: freshUrl(),
      events: ["scorecard.created", "intake.submitted", "scorecard.created", "*", "intake.submitted"],
    })
  ).json();
  t.same(body.events, ["scorecard.created", "intake.submitted", "*"]);
  const listed = await listSubscriptions();
  t.same(listed.subscriptions.find((subscription) => subscription.id === body.id)?.events, [
    "scorecard.created",
    "intake.submitted",
    "*",
  ]);
});

t.test("the list holds the tenant's active subscriptions, oldest first, and total counts them", async (t) => {
  const own = await createTestTenant(server.services);
  const first = await subscribed("https://a.example.com/1", ["*"], own);
  const second = await subscribed("https://b.example.com/2", ["intake.submitted"], own);
  const listed = await listSubscriptions(own);
  t.equal(listed.total, 2);
  t.same(
    listed.subscriptions.map((subscription) => subscription.id),
    [first.id, second.id],
  );
  t.match(listed.subscriptions[1], {
    url: "https://b.example.com/2",
    events: ["intake.submitted"],
    is_active: true,
    tenant_id: own.tenantId,
    created_by: own.subject,
  });
});

t.test("deleting answers 204 with no body and the subscription is no longer listed", async (t) => {
  const own = await createTestTenant(server.services);
  const { id } = await subscribed(freshUrl(), ["*"], own);
  const res = await server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: own.token });
  t.equal(res.status, 204);
  t.equal(await res.text(), "");
  const listed = await listSubscriptions(own);
  t.equal(listed.total, 0);
  const row = await server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: own.tenantId, id })
    .first();
  t.equal(row.is_active, false, "kept, inactive");
  t.ok(row.deactivated_at instanceof Date);
});

t.test("deleting an already inactive subscription answers 204 again", async (t) => {
  const { id } = await subscribed(freshUrl(), ["*"]);
  t.equal(
    (await server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: tenant.token })).status,
    204,
  );
  t.equal(
    (await server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: tenant.token })).status,
    204,
  );
});

t.test("deleting an unknown subscription, or an id that is not a UUID, answers 404 NOT_FOUND", async (t) => {
  for (const id of [crypto.randomUUID(), "not-a-uuid", "1"]) {
    const res = await server.request(`/v1/webhooks/subscriptions/${id}`, {
      method: "DELETE",
      token: tenant.token,
      headers: { "X-Request-Id": "req-404" },
    });
    t.equal(res.status, 404, id);
    t.same(await res.json(), {
      error: { code: "NOT_FOUND", message: "Webhook subscription not found" },
      request_id: "req-404",
    });
  }
});

t.test("deleting another tenant's subscription answers 404 and leaves it active", async (t) => {
  const other = await createTestTenant(server.services);
  const { id } = await subscribed(freshUrl(), ["*"], other);
  const res = await server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: tenant.token });
  t.equal(res.status, 404);
  t.equal((await res.json()).error.code, "NOT_FOUND");
  t.same(
    (await listSubscriptions(other)).subscriptions.map((subscription) => subscription.id),
    [id],
  );
});

t.test("tenant isolation: a tenant lists only its own subscriptions", async (t) => {
  const first = await createTestTenant(server.services);
  const second = await createTestTenant(server.services);
  const mine = await subscribed("https://first.example.com/x", ["*"], first);
  await subscribed("https://second.example.com/x", ["*"], second);
  const listed = await listSubscriptions(first);
  t.same(
    listed.subscriptions.map((subscription) => subscription.id),
    [mine.id],
  );
  t.equal(listed.total, 1);
});

t.test(
  "deliveries are listed newest first, at most limit (default 50), and total counts all of the tenant's deliveries",
  async (t) => {
    const own = await createTestTenant(server.services);
    await subscribed(freshUrl(), ["intake.submitted"], own);
    const submissions: string[] = [];
    for (let i = 0; i < 55; i++) {
      const data = intakeData();
      submissions.push(data.submission_id);
      await server.services.db.transaction((trx) => emitEvent(trx, own.tenantId, "intake.submitted", data));
    }
    const limited = await (await server.request("/v1/webhooks/deliveries?limit=3", { token: own.token })).json();
    t.equal(limited.total, 55);
    t.same(
      limited.deliveries.map(
        (delivery: { payload: { data: { submission_id: string } } }) => delivery.payload.data.submission_id,
      ),
      submissions.slice(-3).reverse(),
      "the three newest, newest first",
    );
    const first = limited.deliveries[0];
    t.match(first, {
      event_type: "intake.submitted",
      status: "pending",
      attempts: 0,
      last_attempt_at: null,
      response_code: null,
      error_message: null,
    });
    t.match(first.created_at, RFC3339_MS_Z);
    const byDefault = await (await server.request("/v1/webhooks/deliveries", { token: own.token })).json();
    t.equal(byDefault.deliveries.length, 50, "50 by default");
    t.equal(byDefault.total, 55);
    const createdAt = byDefault.deliveries.map((delivery: { created_at: string }) => delivery.created_at);
    t.same(createdAt, [...createdAt].sort().reverse(), "ordered by created_at descending");
  },
);

t.test("deliveries: limit is 1 to 200", async (t) => {
  for (const limit of ["0", "201", "-1", "many"]) {
    const res = await server.request(`/v1/webhooks/deliveries?limit=${limit}`, { token: tenant.token });
    t.equal(res.status, 422, limit);
    t.same((await res.json()).detail[0].loc, ["query", "limit"]);
  }
  t.equal((await server.request("/v1/webhooks/deliveries?limit=200", { token: tenant.token })).status, 200);
});

t.test("tenant isolation: a tenant lists and counts only its own deliveries", async (t) => {
  const first = await createTestTenant(server.services);
  const second = await createTestTenant(server.services);
  await subscribed(freshUrl(), ["*"], first);
  await subscribed(freshUrl(), ["*"], second);
  const mine = intakeData();
  await emitEvent(server.services.db, first.tenantId, "intake.submitted", mine);
  await emitEvent(server.services.db, second.tenantId, "intake.submitted", intakeData());
  await emitEvent(server.services.db, second.tenantId, "intake.submitted", intakeData());
  const listed = await (await server.request("/v1/webhooks/deliveries", { token: first.token })).json();
  t.equal(listed.total, 1);
  t.same(
    listed.deliveries.map((delivery: { payload: { tenant_id: string; data: { submission_id: string } } }) => [
      delivery.payload.tenant_id,
      delivery.payload.data.submission_id,
    ]),
    [[first.tenantId, mine.submission_id]],
  );
});

t.test("deactivating a subscription fails its pending deliveries at once, with that reason", async (t) => {
  const own = await createTestTenant(server.services);
  const { id } = await subscribed(freshUrl(), ["*"], own);
  await emitEvent(server.services.db, own.tenantId, "intake.submitted", intakeData());
  t.equal(
    (await server.request(`/v1/webhooks/subscriptions/${id}`, { method: "DELETE", token: own.token })).status,
    204,
  );
  const [delivery] = (await (await server.request("/v1/webhooks/deliveries", { token: own.token })).json()).deliveries;
  t.match(delivery, { subscription_id: id, status: "failed", attempts: 0, error_message: /deactivated/ });
  t.equal(
    await emitEvent(server.services.db, own.tenantId, "intake.submitted", intakeData()),
    0,
    "an inactive subscription matches no new events",
  );
});

t.test("every webhook operation needs a bearer token", async (t) => {
  const id = crypto.randomUUID();
  for (const [method, path] of [
    ["POST", "/v1/webhooks/subscriptions"],
    ["GET", "/v1/webhooks/subscriptions"],
    ["DELETE", `/v1/webhooks/subscriptions/${id}`],
    ["GET", "/v1/webhooks/deliveries"],
  ] as const) {
    const res = await server.request(path, {
      method,
      ...(method === "POST" ? { json: { url: freshUrl(), events: ["*"] } } : {}),
    });
    t.equal(res.status, 401, `${method} ${path}`);
    t.equal((await res.json()).error.code, "UNAUTHORIZED");
  }
});

t.test("no API response failed the document's response validation", async (t) => {
  t.same(server.errors, []);
});
