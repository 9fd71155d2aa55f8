// Subscription limits: at most WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT subscriptions that
// are not deleted (409 WEBHOOK_SUBSCRIPTION_LIMIT_REACHED), one per URL (409
// WEBHOOK_SUBSCRIPTION_DUPLICATE_URL), both holding under concurrent calls, and each refusal changing nothing.
// One per URL whatever its spelling: a subscription's URL is stored and answered in its canonical form
// (canonicalWebhookUrl in foundation/url-safety.ts), so another spelling of an existing URL is a duplicate;
// a fragment, never sent to an endpoint, is refused with 422.
import t from "tap";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";

const LIMIT = 3;
let server: TestServer;

t.before(async () => {
  server = await startTestServer(t, {
    env: { WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT: String(LIMIT), WEBHOOK_ALLOWED_PORTS: "443,18843" },
  });
});

const url = (): string => `https://hooks.example.com/${crypto.randomUUID()}`;

function subscribe(who: TestTenant, target: string): Promise<Response> {
  return server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: who.token,
    json: { url: target, events: ["*"] },
  });
}

async function listed(who: TestTenant): Promise<{ id: string; url: string }[]> {
  const res = await server.request("/v1/webhooks/subscriptions", { token: who.token });
  return ((await res.json()) as { subscriptions: { id: string; url: string }[] }).subscriptions;
}

const errorOf = async (res: Response) =>
  ((await res.json()) as { error: { code: string; message: string; details: Record<string, unknown> } }).error;

t.test("one subscription over the limit is 409 WEBHOOK_SUBSCRIPTION_LIMIT_REACHED and creates nothing", async (t) => {
  const who = await createTestTenant(server.services);
  for (let i = 0; i < LIMIT; i++) t.equal((await subscribe(who, url())).status, 201);
  const refused = await subscribe(who, url());
  t.equal(refused.status, 409);
  const error = await errorOf(refused);
  t.equal(error.code, "WEBHOOK_SUBSCRIPTION_LIMIT_REACHED");
  t.same(error.details, { limit: LIMIT });
  t.equal((await listed(who)).length, LIMIT, "nothing was created");
});

t.test("a deleted subscription frees its place; a disabled one keeps it", async (t) => {
  const who = await createTestTenant(server.services);
  const ids: string[] = [];
  for (let i = 0; i < LIMIT; i++) ids.push(((await (await subscribe(who, url())).json()) as { id: string }).id);
  await server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: who.tenantId, id: ids[0] })
    .update({ disabled_at: new Date(), disabled_reason: "20 deliveries in a row failed" });
  t.equal((await subscribe(who, url())).status, 409, "disabled subscriptions count");
  const deleted = await server.request(`/v1/webhooks/subscriptions/${ids[1]}`, { method: "DELETE", token: who.token });
  t.equal(deleted.status, 204);
  t.equal((await subscribe(who, url())).status, 201, "a deleted one does not");
});

t.test("the limit is per tenant", async (t) => {
  const full = await createTestTenant(server.services);
  for (let i = 0; i < LIMIT; i++) await subscribe(full, url());
  const other = await createTestTenant(server.services);
  t.equal((await subscribe(other, url())).status, 201);
});

t.test("the limit holds under concurrent creates", async (t) => {
  const who = await createTestTenant(server.services);
  const statuses = await Promise.all(
    Array.from({ length: LIMIT * 3 }, async () => (await subscribe(who, url())).status),
  );
  t.equal(statuses.filter((status) => status === 201).length, LIMIT);
  t.equal(statuses.filter((status) => status === 409).length, LIMIT * 2);
  t.equal((await listed(who)).length, LIMIT);
});

t.test(
  "a URL identical to one of the tenant's subscriptions is 409 WEBHOOK_SUBSCRIPTION_DUPLICATE_URL naming it",
  async (t) => {
    const who = await createTestTenant(server.services);
    const target = url();
    const first = (await (await subscribe(who, target)).json()) as { id: string };
    const refused = await subscribe(who, target);
    t.equal(refused.status, 409);
    const error = await errorOf(refused);
    t.equal(error.code, "WEBHOOK_SUBSCRIPTION_DUPLICATE_URL");
    t.same(error.details, { subscription_id: first.id });
    t.equal((await listed(who)).length, 1, "nothing was created");
  },
);

t.test("a duplicate URL is refused even when the first subscription is disabled", async (t) => {
  const who = await createTestTenant(server.services);
  const target = url();
  const first = (await (await subscribe(who, target)).json()) as { id: string };
  await server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: who.tenantId, id: first.id })
    .update({ disabled_at: new Date(), disabled_reason: "x" });
  t.equal((await subscribe(who, target)).status, 409);
});

t.test("the URL of a deleted subscription, or of another tenant's, may be subscribed", async (t) => {
  const who = await createTestTenant(server.services);
  const target = url();
  const first = (await (await subscribe(who, target)).json()) as { id: string };
  t.equal((await subscribe(await createTestTenant(server.services), target)).status, 201, "another tenant");
  await server.request(`/v1/webhooks/subscriptions/${first.id}`, { method: "DELETE", token: who.token });
  t.equal((await subscribe(who, target)).status, 201, "after deleting the first");
});

t.test("spellings of one URL are one subscription; a fragment is refused", async (t) => {
  const who = await createTestTenant(server.services);
  const first = await subscribe(who, "https://Hooks.Example.com:0443/./in/%62ox?");
  t.equal(first.status, 201);
  const created = (await first.json()) as { id: string; url: string };
  t.equal(created.url, "https://hooks.example.com/in/box", "stored and answered in its canonical form");
  const read = await server.request(`/v1/webhooks/subscriptions/${created.id}`, { token: who.token });
  t.equal(((await read.json()) as { url: string }).url, "https://hooks.example.com/in/box");

  for (const spelling of [
    "https://hooks.example.com/in/box?",
    "https://HOOKS.EXAMPLE.COM/in/box",
    "https://hooks.example.com./in/box",
    "https://hooks.example.com/./in/box",
    "https://hooks.example.com/in/x/../box",
    "https://hooks.example.com/%69n/box",
    "https://hooks.example.com:443/in/box",
  ]) {
    const res = await subscribe(who, spelling);
    t.equal(res.status, 409, spelling);
    const error = await errorOf(res);
    t.equal(error.code, "WEBHOOK_SUBSCRIPTION_DUPLICATE_URL", spelling);
    t.same(error.details, { subscription_id: created.id }, spelling);
  }

  const ported = await subscribe(who, "https://hooks.example.com:018843/in/box");
  t.equal(ported.status, 201, "another port is another URL");
  t.equal(((await ported.json()) as { url: string }).url, "https://hooks.example.com:18843/in/box");
  t.equal((await subscribe(who, "https://hooks.example.com:18843/in/box")).status, 409, "leading zeros of a port");

  for (const withFragment of ["https://hooks.example.com/other#f", "https://hooks.example.com/other#"]) {
    const res = await subscribe(who, withFragment);
    t.equal(res.status, 422, withFragment);
    const body = (await res.json()) as { detail: { loc: string[]; type: string; msg: string }[] };
    t.same(body.detail[0]?.loc, ["body", "url"]);
    t.equal(body.detail[0]?.type, "value_error");
    t.match(body.detail[0]?.msg, /fragment/);
  }
  t.equal(
    (await subscribe(who, "https://hooks.example.com/in/box%2F")).status,
    201,
    "an escaped slash is another path",
  );
});

t.test("concurrent creates of one URL make exactly one subscription", async (t) => {
  const who = await createTestTenant(server.services);
  const target = url();
  const statuses = await Promise.all(Array.from({ length: 8 }, async () => (await subscribe(who, target)).status));
  t.equal(statuses.filter((status) => status === 201).length, 1);
  t.equal(statuses.filter((status) => status === 409).length, 7);
});

t.test(
  "the database itself refuses a second active subscription with the same URL (unique partial index)",
  async (t) => {
    const who = await createTestTenant(server.services);
    const target = url();
    const row = { tenant_id: who.tenantId, url: target, events: ["*"], secret_encrypted: "x", created_by: "test" };
    await server.services.db("integrator.webhook_subscriptions").insert(row);
    await t.rejects(server.services.db("integrator.webhook_subscriptions").insert(row), { code: "23505" });
    await server.services.db("integrator.webhook_subscriptions").insert({ ...row, is_active: false });
    t.pass("an inactive row with the same URL is allowed");
  },
);

t.test("the body-less webhook operations answer a stray body with a 4xx or as without it, never a 500", async (t) => {
  const who = await createTestTenant(server.services);
  const { id } = (await (await subscribe(who, url())).json()) as { id: string };
  for (const path of [`/v1/webhooks/subscriptions/${id}/enable`, `/v1/webhooks/subscriptions/${id}/rotate-secret`]) {
    for (const [type, body] of [
      ["application/json", "{not json"],
      ["application/json", '{"a":1}'],
      ["text/plain", "hello"],
    ] as const) {
      const res = await server.request(path, {
        method: "POST",
        token: who.token,
        headers: { "Content-Type": type },
        body,
      });
      t.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `${path} ${type} ${body}: ${res.status}`);
    }
  }
  t.same(server.errors, [], "no unexpected error");
});
