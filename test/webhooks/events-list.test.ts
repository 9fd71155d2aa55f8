// The events API: GET /v1/events lists the tenant's recorded events newest first with
// an opaque keyset cursor, filters by kind and creation time, limit 1–200; GET /v1/events/{event_id}
// shows one event and the deliveries it went to (every subscription, resends included), paging on through
// the deliveries list's event_id filter; a test event is an event of its own; another tenant's event
// answers 404 like a missing one; each page query is an index range scan (EXPLAIN).
import t from "tap";
import type { Knex } from "knex";
import { emitEvent } from "../../db/events.ts";
import { eventsPageQuery } from "../../db/webhooks/events.ts";
import { type DeliveryView, type EventView } from "../../db/webhooks/views.ts";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";
import { intakeEventData } from "../helpers/webhooks.ts";
import { assertIndexRangeScans, pastKeyset } from "../helpers/keyset-plans.ts";

let server: TestServer;
let db: Knex;

t.before(async () => {
  server = await startTestServer(t);
  db = server.services.db;
});

interface EventPage {
  events: EventView[];
  next_cursor: string | null;
}

interface EventDetail {
  event: EventView;
  deliveries: DeliveryView[];
  deliveries_next_cursor: string | null;
}

async function get<T>(who: TestTenant, path: string): Promise<T> {
  const res = await server.request(path, { token: who.token });
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

/** A tenant with `subscriptions` subscriptions to every kind (nothing sends: no worker runs here). */
async function tenantSubscribed(subscriptions = 1): Promise<{ who: TestTenant; subscriptionIds: string[] }> {
  const who = await createTestTenant(server.services);
  const subscriptionIds: string[] = [];
  for (let i = 0; i < subscriptions; i++) {
    const res = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: who.token,
      json: { url: `https://hooks.example.com/events-${crypto.randomUUID()}`, events: ["*"] },
    });
    subscriptionIds.push(((await res.json()) as { id: string }).id);
  }
  return { who, subscriptionIds };
}

function emit(who: TestTenant, kind: "intake.submitted" | "scorecard.created"): Promise<number> {
  return kind === "intake.submitted"
    ? emitEvent(db, who.tenantId, kind, intakeEventData())
    : emitEvent(db, who.tenantId, kind, { scorecard_id: crypto.randomUUID() });
}

/** Every page of the list with `query`, `limit` at a time; `between` runs after each page. */
async function walk(who: TestTenant, query: string, limit: number, between?: () => Promise<unknown>) {
  const seen: EventView[] = [];
  const pageSizes: number[] = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 100; guard++) {
    const page: EventPage = await get(
      who,
      `/v1/events?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    seen.push(...page.events);
    pageSizes.push(page.events.length);
    cursor = page.next_cursor;
    if (cursor === null) break;
    await between?.();
  }
  return { seen, pageSizes };
}

t.test(
  "GET /v1/events lists the tenant's events newest first: id, type, created_at and the envelope its deliveries carry",
  async (t) => {
    const { who } = await tenantSubscribed(2);
    await emit(who, "intake.submitted");
    await emit(who, "scorecard.created");
    const other = await tenantSubscribed();
    await emit(other.who, "scorecard.created");

    const { events } = await get<EventPage>(who, "/v1/events");
    t.same(
      events.map((event) => event.type),
      ["scorecard.created", "intake.submitted"],
      "newest first, only the tenant's own",
    );
    const deliveries = (await get<{ deliveries: DeliveryView[] }>(who, "/v1/webhooks/deliveries")).deliveries;
    for (const event of events) {
      t.match(event.id, /^evt_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      t.match(event.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      t.equal(event.payload.id, event.id, "the envelope carries the event's id");
      const ofEvent = deliveries.filter((delivery) => delivery.event_id === event.id);
      t.equal(ofEvent.length, 2, "one delivery per subscription names the event");
      for (const delivery of ofEvent) {
        t.same(delivery.payload, event.payload, "and carries the same envelope");
        t.equal(delivery.next_attempt_at, delivery.created_at, "its first attempt is due when it is queued");
      }
    }
  },
);

t.test("an event no subscription takes is not listed; a test event is an event of its own", async (t) => {
  const who = await createTestTenant(server.services);
  const res = await server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: who.token,
    json: { url: `https://hooks.example.com/only-intake-${crypto.randomUUID()}`, events: ["intake.submitted"] },
  });
  const { id: subscriptionId } = (await res.json()) as { id: string };
  t.equal(await emit(who, "scorecard.created"), 0, "nobody takes scorecard.created");
  t.same((await get<EventPage>(who, "/v1/events")).events, [], "so nothing is recorded");

  const sent = await server.request(`/v1/webhooks/subscriptions/${subscriptionId}/test`, {
    method: "POST",
    token: who.token,
  });
  t.equal(sent.status, 202);
  const delivery = (await sent.json()) as DeliveryView;
  const { events } = await get<EventPage>(who, "/v1/events");
  t.equal(events.length, 1);
  t.match(events[0], { id: delivery.event_id, type: "webhook.test", payload: delivery.payload });
  t.equal(delivery.payload.id, delivery.event_id);
});

t.test(
  "paging: limit and next_cursor walk every event once, in order, and events recorded meanwhile shift nothing",
  async (t) => {
    const { who } = await tenantSubscribed();
    for (let i = 0; i < 7; i++) await emit(who, i % 2 === 0 ? "intake.submitted" : "scorecard.created");
    const before = (await get<EventPage>(who, "/v1/events?limit=200")).events;
    t.equal(before.length, 7);
    const { seen, pageSizes } = await walk(who, "", 3, () => emit(who, "scorecard.created"));
    t.same(pageSizes, [3, 3, 1]);
    t.same(
      seen.map((event) => event.id),
      before.map((event) => event.id),
      "exactly the events there were when the walk began, newest first",
    );
    const now = (await get<EventPage>(who, "/v1/events?limit=200")).events;
    t.equal(now.length, 9, "the two recorded meanwhile are on a new first page");
  },
);

t.test(
  "filters: type, and created_after / created_before, exclusive to the millisecond, combined with AND",
  async (t) => {
    const { who } = await tenantSubscribed();
    for (let i = 0; i < 6; i++) await emit(who, i % 2 === 0 ? "intake.submitted" : "scorecard.created");
    // Known creation times, a second apart, in the order they were recorded.
    const rows = await db("integrator.webhook_events")
      .where({ tenant_id: who.tenantId })
      .orderBy([{ column: "created_at" }, { column: "id" }])
      .select<{ id: string }[]>("id");
    for (const [index, row] of rows.entries())
      await db("integrator.webhook_events")
        .where({ tenant_id: who.tenantId, id: row.id })
        .update({ created_at: `2026-03-01T10:00:0${index}.000Z` });

    // Query values are URL-encoded, as the document requires of reserved characters such as `:`.
    const types = (query: string) =>
      get<EventPage>(who, `/v1/events${query.replaceAll(":", "%3A")}`).then((page) =>
        page.events.map((event) => event.created_at),
      );
    t.same(await types("?type=scorecard.created"), [
      "2026-03-01T10:00:05.000Z",
      "2026-03-01T10:00:03.000Z",
      "2026-03-01T10:00:01.000Z",
    ]);
    t.same(
      await types("?created_after=2026-03-01T10:00:01.000Z&created_before=2026-03-01T10:00:04.000Z"),
      ["2026-03-01T10:00:03.000Z", "2026-03-01T10:00:02.000Z"],
      "both bounds exclusive",
    );
    t.same(
      await types("?type=intake.submitted&created_after=2026-03-01T10:00:00.000Z"),
      ["2026-03-01T10:00:04.000Z", "2026-03-01T10:00:02.000Z"],
      "type AND time",
    );
    t.same(await types("?created_before=2026-03-01T10:00:00.000Z"), []);
    const { seen, pageSizes } = await walk(who, "&type=intake.submitted", 2);
    t.same(pageSizes, [2, 1], "paging keeps the filter");
    t.same(
      seen.map((event) => event.type),
      ["intake.submitted", "intake.submitted", "intake.submitted"],
    );
  },
);

t.test("a limit outside 1–200, an unknown type or a cursor this list did not hand out is 422", async (t) => {
  const { who } = await tenantSubscribed();
  for (const [query, loc] of [
    ["limit=0", ["query", "limit"]],
    ["limit=201", ["query", "limit"]],
    ["type=document.deleted", ["query", "type"]],
    ["created_after=yesterday", ["query", "created_after"]],
    ["cursor=bm90LWEtY3Vyc29y", ["query", "cursor"]],
  ] as const) {
    const res = await server.request(`/v1/events?${query}`, { token: who.token });
    t.equal(res.status, 422, query);
    const body = (await res.json()) as { detail: { loc: string[] }[] };
    t.same(body.detail[0]?.loc, loc, `${query}: at ${loc.join(".")}`);
  }
});

t.test("a time range bound or a cursor that names no instant is 422 value_error at its loc", async (t) => {
  const { who } = await tenantSubscribed();
  const forged = (createdAt: string) =>
    Buffer.from(JSON.stringify({ c: createdAt, i: "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69" })).toString("base64url");
  // Of the date-time (or keyset) form, but no instant: PostgreSQL refused them with a 500.
  for (const [query, loc] of [
    ["created_after=2026-02-30T00:00:00Z", ["query", "created_after"]],
    ["created_before=0000-01-01T00:00:00Z", ["query", "created_before"]],
    ["created_before=2026-01-01T00:00:00%2B99:00", ["query", "created_before"]],
    [`cursor=${forged("2026-02-30T00:00:00.000000Z")}`, ["query", "cursor"]],
  ] as const) {
    const res = await server.request(`/v1/events?${query}`, { token: who.token });
    t.equal(res.status, 422, query);
    const body = (await res.json()) as { detail: { loc: string[]; type: string }[] };
    t.match(body.detail, [{ loc, type: "value_error" }], `${query}: at ${loc.join(".")}`);
  }
});

t.test(
  "GET /v1/events/{event_id}: the event and its deliveries, one per subscription and the resends, newest first",
  async (t) => {
    const { who, subscriptionIds } = await tenantSubscribed(2);
    await emit(who, "intake.submitted");
    const [listed] = (await get<EventPage>(who, "/v1/events")).events;
    if (!listed) return t.fail("no event");
    const before = await get<EventDetail>(who, `/v1/events/${listed.id}`);
    t.same(before.event, listed, "the event as listed");
    t.equal(before.deliveries.length, 2);
    t.same(before.deliveries.map((delivery) => delivery.subscription_id).sort(), [...subscriptionIds].sort());
    t.equal(before.deliveries_next_cursor, null);

    const original = before.deliveries[0];
    const res = await server.request(`/v1/webhooks/deliveries/${original?.id}/redeliver`, {
      method: "POST",
      token: who.token,
    });
    t.equal(res.status, 202);
    const resend = (await res.json()) as DeliveryView;
    t.match(resend, { event_id: listed.id, origin: "redelivery", redelivery_of: original?.id });
    const after = await get<EventDetail>(who, `/v1/events/${listed.id}`);
    t.equal(after.deliveries.length, 3);
    t.same(after.deliveries[0], resend, "the resend, newest, first");
    t.same(
      (await get<{ deliveries: DeliveryView[] }>(who, `/v1/webhooks/deliveries?event_id=${listed.id}`)).deliveries,
      after.deliveries,
      "the deliveries list filtered by the event shows the same",
    );
    t.same((await get<EventPage>(who, "/v1/events")).events, [listed], "a resend is no new event");
  },
);

t.test(
  "an event with more than 200 deliveries shows the newest 200; deliveries_next_cursor pages the rest through listWebhookDeliveries",
  async (t) => {
    const who = await createTestTenant(server.services);
    await db("integrator.webhook_subscriptions").insert(
      Array.from({ length: 203 }, (_, index) => ({
        tenant_id: who.tenantId,
        url: `https://hooks.example.com/many-${index}`,
        events: ["scorecard.created"],
        secret_encrypted: "x",
        created_by: "test",
      })),
    );
    t.equal(await emit(who, "scorecard.created"), 203);
    const [event] = (await get<EventPage>(who, "/v1/events")).events;
    const detail = await get<EventDetail>(who, `/v1/events/${event?.id}`);
    t.equal(detail.deliveries.length, 200);
    t.type(detail.deliveries_next_cursor, "string");
    const rest = await get<{ deliveries: DeliveryView[]; next_cursor: string | null }>(
      who,
      `/v1/webhooks/deliveries?event_id=${event?.id}&cursor=${encodeURIComponent(detail.deliveries_next_cursor ?? "")}`,
    );
    t.equal(rest.deliveries.length, 3);
    t.equal(rest.next_cursor, null);
    t.equal(
      new Set([...detail.deliveries, ...rest.deliveries].map((delivery) => delivery.subscription_id)).size,
      203,
      "every subscription's delivery once",
    );
  },
);

t.test("another tenant's event, an unknown id and a malformed id answer 404 alike", async (t) => {
  const owner = await tenantSubscribed();
  await emit(owner.who, "scorecard.created");
  const [event] = (await get<EventPage>(owner.who, "/v1/events")).events;
  const stranger = await tenantSubscribed();
  const answers: Record<string, unknown>[] = [];
  for (const id of [
    event?.id,
    `evt_${crypto.randomUUID()}`,
    "evt_not-a-uuid",
    event?.id.slice("evt_".length),
    "x".repeat(64),
  ]) {
    const res = await server.request(`/v1/events/${encodeURIComponent(String(id))}`, { token: stranger.who.token });
    t.equal(res.status, 404, String(id));
    const { error } = (await res.json()) as { error: Record<string, unknown> };
    answers.push(error);
  }
  t.equal(new Set(answers.map((answer) => JSON.stringify(answer))).size, 1, "the same answer each time");
  t.equal((await server.request(`/v1/events/${event?.id}`, { token: owner.who.token })).status, 200);
  const filtered = await get<{ deliveries: DeliveryView[] }>(
    stranger.who,
    `/v1/webhooks/deliveries?event_id=${event?.id}`,
  );
  t.same(filtered.deliveries, [], "nor does the deliveries list show another tenant's");
  const malformed = await server.request("/v1/webhooks/deliveries?event_id=evt_123", { token: owner.who.token });
  t.equal(malformed.status, 422, "an event_id filter that is no event id is 422");
});

t.test("each events page query is an index range scan with tenant_id leading, without a sort", async (t) => {
  const tenants = [await createTestTenant(server.services), await createTestTenant(server.services)];
  for (const who of tenants)
    await db.raw(
      `insert into integrator.webhook_events (tenant_id, event_type, payload, created_at)
       select ?, case when g % 2 = 0 then 'intake.submitted' else 'scorecard.created' end, '{}'::jsonb,
              now() - make_interval(secs => g)
         from generate_series(1, 20000) g`,
      [who.tenantId],
    );
  await db.raw("analyze integrator.webhook_events");
  const tenantId = tenants[0]?.tenantId ?? "";
  const cursor = pastKeyset();
  const pages = {
    newest: { limit: 50 },
    "after a cursor": { limit: 50, after: cursor },
    "by type": { limit: 50, type: "scorecard.created" },
    "by type after a cursor": { limit: 50, type: "scorecard.created", after: cursor },
    "by time range": { limit: 50, createdBefore: new Date(Date.now() - 3_600_000).toISOString() },
  };
  await assertIndexRangeScans(
    t,
    db,
    "webhook_events_",
    Object.fromEntries(Object.entries(pages).map(([name, request]) => [name, eventsPageQuery(db, tenantId, request)])),
  );
});
