// A subscription's delivery rate limit through the API (rate_limit_per_second on createWebhookSubscription,
// updateWebhookSubscription, get and list): a whole number from 1 to 1000 or null, refused otherwise with a
// 422 naming the field, merge-patch semantics (absent stays, null removes), audited when it changes. The
// worker's pacing has its tests in test/worker/rate-limit.test.ts.
import t from "tap";
import { listAudit } from "../../db/audit.ts";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";

const freshUrl = (): string => `https://hooks.example.com/review/${crypto.randomUUID()}`;

interface Subscription {
  id: string;
  rate_limit_per_second: number | null;
}

let server: TestServer;
let tenant: TestTenant;

t.before(async () => {
  server = await startTestServer(t, { env: { WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT: "10000" } });
  tenant = await createTestTenant(server.services);
});

const create = (body: unknown): Promise<Response> =>
  server.request("/v1/webhooks/subscriptions", { method: "POST", token: tenant.token, json: body });
const patch = (id: string, body: unknown): Promise<Response> =>
  server.request(`/v1/webhooks/subscriptions/${id}`, { method: "PATCH", token: tenant.token, json: body });
async function read(id: string): Promise<Subscription> {
  const res = await server.request(`/v1/webhooks/subscriptions/${id}`, { token: tenant.token });
  if (res.status !== 200) throw new Error(`get answered ${res.status}`);
  return (await res.json()) as Subscription;
}
async function listed(id: string): Promise<Subscription | undefined> {
  const res = await server.request("/v1/webhooks/subscriptions", { token: tenant.token });
  return ((await res.json()) as { subscriptions: Subscription[] }).subscriptions.find((s) => s.id === id);
}
/** The 422's issues as [loc, type]. */
async function issues(res: Response): Promise<[unknown[], string][]> {
  const body = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
  return body.detail.map((issue) => [issue.loc, issue.type]);
}

const REFUSED: [unknown, string][] = [
  [0, "greater_than_equal"],
  [-3, "greater_than_equal"],
  [1001, "less_than_equal"],
  [1.5, "int_type"],
  ["5", "int_type"],
  [true, "int_type"],
];

t.test("created without a limit: null in the answer, in get and in list", async (t) => {
  const res = await create({ url: freshUrl(), events: ["*"] });
  t.equal(res.status, 201);
  const created = (await res.json()) as Subscription;
  t.equal(created.rate_limit_per_second, null);
  t.equal((await read(created.id)).rate_limit_per_second, null);
  t.equal((await listed(created.id))?.rate_limit_per_second, null);
});

t.test("created with a limit of 1, 5 and 1000: answered, shown by get and list, audited", async (t) => {
  for (const rate of [1, 5, 1000]) {
    const res = await create({ url: freshUrl(), events: ["*"], rate_limit_per_second: rate });
    t.equal(res.status, 201, `${rate}: 201`);
    const created = (await res.json()) as Subscription;
    t.equal(created.rate_limit_per_second, rate);
    t.equal((await read(created.id)).rate_limit_per_second, rate, `${rate}: get`);
    t.equal((await listed(created.id))?.rate_limit_per_second, rate, `${rate}: list`);
  }
  const created = await listAudit(server.services.db, tenant.tenantId, "webhooks.subscription_created");
  t.ok(
    created.some((entry) => (entry.details as { rate_limit_per_second?: number }).rate_limit_per_second === 1000),
    "the creation's audit names the limit",
  );
  t.equal((await create({ url: freshUrl(), events: ["*"], rate_limit_per_second: null })).status, 201, "null: none");
});

t.test("0, a negative number, more than 1000, a fraction, a string: 422 at the field, nothing created", async (t) => {
  for (const [rate, type] of REFUSED) {
    const url = freshUrl();
    const res = await create({ url, events: ["*"], rate_limit_per_second: rate });
    t.equal(res.status, 422, `${JSON.stringify(rate)}: 422`);
    t.same(await issues(res), [[["body", "rate_limit_per_second"], type]], `${JSON.stringify(rate)}: ${type}`);
    const all = await server.request("/v1/webhooks/subscriptions", { token: tenant.token });
    const urls = ((await all.json()) as { subscriptions: { url: string }[] }).subscriptions.map((s) => s.url);
    t.notOk(urls.includes(url), `${JSON.stringify(rate)}: nothing created`);
  }
});

t.test("PATCH sets, keeps (absent), refuses the same values, and null removes the limit; audited", async (t) => {
  const created = (await (await create({ url: freshUrl(), events: ["*"] })).json()) as Subscription;
  const set = await patch(created.id, { rate_limit_per_second: 7 });
  t.equal(set.status, 200);
  t.equal(((await set.json()) as Subscription).rate_limit_per_second, 7);
  t.equal((await read(created.id)).rate_limit_per_second, 7);

  const other = await patch(created.id, { description: "pacing kept" });
  t.equal(other.status, 200);
  t.equal(((await other.json()) as Subscription).rate_limit_per_second, 7, "absent: kept");

  for (const [rate, type] of REFUSED) {
    const res = await patch(created.id, { rate_limit_per_second: rate });
    t.equal(res.status, 422, `${JSON.stringify(rate)}: 422`);
    t.same(await issues(res), [[["body", "rate_limit_per_second"], type]], `${JSON.stringify(rate)}: ${type}`);
  }
  t.equal((await read(created.id)).rate_limit_per_second, 7, "nothing changed");

  const cleared = await patch(created.id, { rate_limit_per_second: null });
  t.equal(cleared.status, 200);
  t.equal(((await cleared.json()) as Subscription).rate_limit_per_second, null, "null: no limit");
  t.equal((await read(created.id)).rate_limit_per_second, null);

  const trail = (await listAudit(server.services.db, tenant.tenantId, "webhooks.subscription_updated"))
    .filter((entry) => entry.resource_id === created.id)
    .map((entry) => entry.details as Record<string, unknown>);
  t.same(
    trail
      .filter((details) => (details.changed as string[]).includes("rate_limit_per_second"))
      .map((details) => details.rate_limit_per_second),
    [
      { from: null, to: 7 },
      { from: 7, to: null },
    ],
    "each change of the limit is audited with its values",
  );
});

t.test("the database refuses a limit outside 1 to 1000 written around the API", async (t) => {
  const created = (await (await create({ url: freshUrl(), events: ["*"] })).json()) as Subscription;
  await t.rejects(
    server.services
      .db("integrator.webhook_subscriptions")
      .where({ tenant_id: tenant.tenantId, id: created.id })
      .update({ rate_limit_per_second: 0 }),
    /webhook_subscriptions_rate_limit_range/,
  );
});
