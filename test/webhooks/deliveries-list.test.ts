// Attempt history and the deliveries list: every attempt recorded and shown by
// getWebhookDelivery; the list newest first with an opaque keyset cursor that new deliveries do not
// disturb, filters, limit 1-200, and an exact total kept by a per-tenant counter; each page query is an
// index range scan (EXPLAIN), whatever the filter.
import t from "tap";
import { emitEvent } from "../../db/events.ts";
import { deliveriesPageQuery } from "../../db/webhooks/deliveries.ts";
import { type DeliveryView } from "../../db/webhooks/views.ts";
import type { ReceivedRequest, Answer } from "../helpers/https-receiver.ts";
import { createTestTenant, type TestTenant } from "../helpers/server.ts";
import { intakeEventData, startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { assertIndexRangeScans, pastKeyset } from "../helpers/keyset-plans.ts";

const ca = testCa(t);
let rig: WebhookRig;

function answer(request: ReceivedRequest, count: number): Answer {
  if (request.path.startsWith("/fail-once")) return count === 1 ? { status: 500 } : { status: 204 };
  if (request.path.startsWith("/stall")) return "stall";
  return { status: 204 };
}

t.before(async () => {
  rig = await startWebhookRig(t, ca, { answer });
});

interface Page {
  deliveries: DeliveryView[];
  total: number;
  next_cursor: string | null;
}

async function page(who: TestTenant, query = ""): Promise<Page> {
  const res = await rig.server.request(`/v1/webhooks/deliveries${query}`, { token: who.token });
  if (res.status !== 200) throw new Error(`list answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Page;
}

/** Queues deliveries without a worker touching them: subscriptions of a fresh tenant on paths nobody sends to yet. */
async function tenantWithDeliveries(events: number, subscriptions = 1): Promise<{ who: TestTenant; ids: string[] }> {
  const who = await createTestTenant(rig.server.services);
  const ids: string[] = [];
  for (let i = 0; i < subscriptions; i++) {
    const res = await rig.server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: who.token,
      json: { url: rig.receiver.url(`/list-${crypto.randomUUID()}`), events: ["*"] },
    });
    ids.push(((await res.json()) as { id: string }).id);
  }
  for (let i = 0; i < events; i++) await emit(who, i % 2 === 0 ? "intake.submitted" : "scorecard.created");
  return { who, ids };
}

async function emit(who: TestTenant, kind: "intake.submitted" | "scorecard.created"): Promise<void> {
  await rig.server.services.db.transaction((trx) =>
    kind === "intake.submitted"
      ? emitEvent(trx, who.tenantId, kind, intakeEventData())
      : emitEvent(trx, who.tenantId, kind, { scorecard_id: crypto.randomUUID() }),
  );
}

async function walk(who: TestTenant, query: string, limit: number): Promise<DeliveryView[]> {
  const seen: DeliveryView[] = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 100; guard++) {
    const sep = query ? "&" : "?";
    const next: Page = await page(
      who,
      `${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    seen.push(...next.deliveries);
    cursor = next.next_cursor;
    if (cursor === null) break;
  }
  return seen;
}

function newestFirst(deliveries: DeliveryView[]): boolean {
  return deliveries.every((delivery, i) => {
    const previous = deliveries[i - 1];
    if (!previous) return true;
    return (
      previous.created_at > delivery.created_at ||
      (previous.created_at === delivery.created_at && previous.id > delivery.id)
    );
  });
}

t.test(
  "every attempt is recorded: getWebhookDelivery shows each with time, duration, outcome, status and class",
  async (t) => {
    const path = `/fail-once-${crypto.randomUUID()}`;
    const { id } = await rig.subscribe(rig.receiver.url(path), ["intake.submitted"]);
    await rig.emitIntake();
    const final = await rig.finalDelivery(id);
    if (!final) return t.fail("no delivery");
    const res = await rig.server.request(`/v1/webhooks/deliveries/${final.id}`, { token: rig.tenant.token });
    t.equal(res.status, 200);
    const detail = (await res.json()) as { delivery: DeliveryView; attempts: Record<string, unknown>[] };
    t.same(detail.delivery, final, "the delivery as listed");
    t.equal(detail.attempts.length, 2);
    t.match(detail.attempts[0], { number: 1, outcome: "failed", response_code: 500, error_class: "http_status" });
    t.match(detail.attempts[1], { number: 2, outcome: "delivered", response_code: 204, error_class: null });
    for (const attempt of detail.attempts) {
      t.match(attempt.attempted_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      t.ok(Number.isInteger(attempt.duration_ms) && (attempt.duration_ms as number) >= 0, "duration_ms");
    }
    t.ok(String(detail.attempts[0]?.attempted_at) <= String(detail.attempts[1]?.attempted_at), "oldest first");
  },
);

t.test("a timed-out attempt is recorded with error_class timeout and about the timeout as its duration", async (t) => {
  // A rig of its own: a short timeout would make the other tests depend on the machine's load.
  const stalled = await startWebhookRig(t, ca, {
    answer,
    env: { WEBHOOK_TIMEOUT_MS: "300", MAX_DELIVERY_ATTEMPTS: "1" },
  });
  const path = `/stall-${crypto.randomUUID()}`;
  const { id } = await stalled.subscribe(stalled.receiver.url(path), ["intake.submitted"]);
  await stalled.emitIntake();
  const delivery = await stalled.finalDelivery(id);
  const detail = (await (
    await stalled.server.request(`/v1/webhooks/deliveries/${delivery?.id}`, { token: stalled.tenant.token })
  ).json()) as {
    attempts: { error_class: string; duration_ms: number; response_code: number | null }[];
  };
  t.match(detail.attempts[0], { error_class: "timeout", response_code: null });
  t.ok((detail.attempts[0]?.duration_ms ?? 0) >= 250, `duration ${detail.attempts[0]?.duration_ms} ms`);
});

t.test("getWebhookDelivery: unknown, malformed and foreign ids answer 404 alike", async (t) => {
  const { who } = await tenantWithDeliveries(1);
  const [own] = (await page(who)).deliveries;
  const stranger = await createTestTenant(rig.server.services);
  for (const [id, token] of [
    [own?.id, stranger.token],
    [crypto.randomUUID(), who.token],
    ["nope", who.token],
  ] as const) {
    const res = await rig.server.request(`/v1/webhooks/deliveries/${id}`, { token });
    t.equal(res.status, 404, String(id));
    t.equal(((await res.json()) as { error: { code: string } }).error.code, "NOT_FOUND");
  }
});

t.test("the cursor walks every delivery once, newest first, and next_cursor is null on the last page", async (t) => {
  const { who } = await tenantWithDeliveries(7);
  const all = await page(who, "?limit=200");
  t.equal(all.deliveries.length, 7);
  t.equal(all.next_cursor, null);
  t.ok(newestFirst(all.deliveries), "newest first");
  const first = await page(who, "?limit=3");
  t.equal(first.deliveries.length, 3);
  t.type(first.next_cursor, "string");
  const walked = await walk(who, "", 3);
  t.same(
    walked.map((delivery) => delivery.id),
    all.deliveries.map((delivery) => delivery.id),
  );
});

t.test("deliveries created while paging do not shift or repeat the pages already keyed", async (t) => {
  const { who } = await tenantWithDeliveries(6);
  const before = (await page(who, "?limit=200")).deliveries.map((delivery) => delivery.id);
  const first = await page(who, "?limit=2");
  await emit(who, "intake.submitted");
  await emit(who, "intake.submitted");
  const seen = [...first.deliveries];
  let cursor = first.next_cursor;
  while (cursor) {
    const next = await page(who, `?limit=2&cursor=${encodeURIComponent(cursor)}`);
    seen.push(...next.deliveries);
    cursor = next.next_cursor;
  }
  t.same(
    seen.map((delivery) => delivery.id),
    before,
    "exactly the deliveries that existed, in order",
  );
  t.equal((await page(who)).total, 8, "the new ones are counted and come on a new first page");
});

t.test("filters: subscription_id, status, event_type and the creation time range", async (t) => {
  const { who, ids } = await tenantWithDeliveries(4, 2);
  await rig.jobsDrained();
  await rig.server.services
    .db("integrator.webhook_deliveries")
    .where({ tenant_id: who.tenantId, subscription_id: ids[1] ?? "", event_type: "intake.submitted" })
    .update({ status: "failed" });
  const all = (await page(who, "?limit=200")).deliveries;
  t.equal(all.length, 8);
  const [a] = ids;
  const bySubscription = await walk(who, `?subscription_id=${a}`, 3);
  t.equal(bySubscription.length, 4);
  t.ok(bySubscription.every((delivery) => delivery.subscription_id === a));
  const byKind = await walk(who, "?event_type=scorecard.created", 3);
  t.equal(byKind.length, 4);
  t.ok(byKind.every((delivery) => delivery.event_type === "scorecard.created"));
  const byStatus = await walk(who, "?status=failed", 1);
  t.equal(byStatus.length, 2);
  t.same(
    byStatus.map((delivery) => delivery.id),
    all.filter((delivery) => delivery.status === "failed").map((delivery) => delivery.id),
  );
  t.equal((await page(who, "?status=delivered&event_type=webhook.test")).deliveries.length, 0);
  const oldest = all.at(-1)?.created_at ?? "";
  const newest = all[0]?.created_at ?? "";
  const after = await page(who, `?limit=200&created_after=${encodeURIComponent(oldest)}`);
  t.ok(
    after.deliveries.every((delivery) => delivery.created_at > oldest),
    "created_after is exclusive",
  );
  const beforeNewest = await page(who, `?limit=200&created_before=${encodeURIComponent(newest)}`);
  t.ok(
    beforeNewest.deliveries.every((delivery) => delivery.created_at < newest),
    "created_before is exclusive",
  );
  t.equal(after.total, 8, "total ignores the filters");
});

t.test("a cursor this list did not hand out is 422 value_error at query.cursor", async (t) => {
  const { who } = await tenantWithDeliveries(1);
  const forged = (createdAt: string) =>
    Buffer.from(JSON.stringify({ c: createdAt, i: "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69" })).toString("base64url");
  for (const cursor of [
    "garbage",
    Buffer.from('{"c":"x","i":"y"}').toString("base64url"),
    "e30",
    // Of the keyset's form, but a day that does not exist (PostgreSQL refused it with a 500).
    forged("2026-02-30T00:00:00.000000Z"),
    forged("0000-01-01T00:00:00.000000Z"),
  ]) {
    const res = await rig.server.request(`/v1/webhooks/deliveries?cursor=${cursor}`, { token: who.token });
    t.equal(res.status, 422, cursor);
    const body = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    t.match(body.detail[0], { loc: ["query", "cursor"], type: "value_error" });
  }
  for (const query of [
    "?limit=0",
    "?limit=201",
    "?status=lost",
    "?subscription_id=x",
    "?created_after=yesterday",
    "?created_after=2026-02-30T00:00:00Z",
    "?created_before=0000-01-01T00:00:00Z",
    "?created_after=2026-01-01T00:00:00%2B99:00",
  ]) {
    t.equal((await rig.server.request(`/v1/webhooks/deliveries${query}`, { token: who.token })).status, 422, query);
  }
});

t.test("total is exact: emit_event, test events and redeliveries count, other tenants do not", async (t) => {
  const { who, ids } = await tenantWithDeliveries(3, 2);
  await tenantWithDeliveries(2);
  t.equal((await page(who)).total, 6);
  const test = await rig.server.request(`/v1/webhooks/subscriptions/${ids[0]}/test`, {
    method: "POST",
    token: who.token,
  });
  const queued = (await test.json()) as DeliveryView;
  await rig.server.request(`/v1/webhooks/deliveries/${queued.id}/redeliver`, { method: "POST", token: who.token });
  const counted = (await page(who)).total;
  const actual = await rig.server.services
    .db("integrator.webhook_deliveries")
    .where({ tenant_id: who.tenantId })
    .count("* as n");
  t.equal(counted, 8);
  t.equal(counted, Number(actual[0]?.n));
});

t.test("total stays exact under concurrent emitting transactions", async (t) => {
  const { who } = await tenantWithDeliveries(0, 3);
  await Promise.all(Array.from({ length: 12 }, () => emit(who, "scorecard.created")));
  t.equal((await page(who)).total, 36);
});

t.test("a rolled-back event counts nothing", async (t) => {
  const { who } = await tenantWithDeliveries(1);
  await t.rejects(
    rig.server.services.db.transaction(async (trx) => {
      await emitEvent(trx, who.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() });
      throw new Error("rollback");
    }),
  );
  t.equal((await page(who)).total, 1);
});

t.test(
  "each page query is an index range scan with tenant_id leading, without a sort, whatever the filter",
  async (t) => {
    const db = rig.server.services.db;
    const tenants = [await createTestTenant(rig.server.services), await createTestTenant(rig.server.services)];
    const subscriptionIds: string[] = [];
    for (const who of tenants) {
      const [row] = await db("integrator.webhook_subscriptions")
        .insert({
          tenant_id: who.tenantId,
          url: `https://hooks.example.com/explain-${crypto.randomUUID()}`,
          events: ["*"],
          secret_encrypted: "x",
          created_by: "test",
          is_active: false,
        })
        .returning("id");
      subscriptionIds.push(row.id);
      await db.raw(
        `insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_id, event_type, payload, status, created_at)
       select ?, ?, md5((g / 2)::text)::uuid, case when g % 2 = 0 then 'intake.submitted' else 'scorecard.created' end,
              '{}'::jsonb, case when g % 3 = 0 then 'failed' else 'delivered' end, now() - make_interval(secs => g)
         from generate_series(1, 20000) g`,
        [who.tenantId, row.id],
      );
    }
    await db.raw("analyze integrator.webhook_deliveries");
    const tenantId = tenants[0]?.tenantId ?? "";
    const cursor = pastKeyset();
    const pages = {
      newest: { limit: 50 },
      "after a cursor": { limit: 50, after: cursor },
      "by subscription": { limit: 50, subscriptionId: subscriptionIds[0] ?? "" },
      "by status": { limit: 50, status: "failed" as const },
      "by event type": { limit: 50, eventType: "scorecard.created" as const },
      "by event": { limit: 50, eventId: "cee63112-1c2e-c923-2f3a-2f028ad5c89b" }, // md5("500"): two of them
      "by time range": { limit: 50, createdBefore: new Date(Date.now() - 3_600_000).toISOString() },
    };
    await assertIndexRangeScans(
      t,
      db,
      "webhook_deliveries_",
      Object.fromEntries(
        Object.entries(pages).map(([name, request]) => [name, deliveriesPageQuery(db, tenantId, request)]),
      ),
    );
  },
);
