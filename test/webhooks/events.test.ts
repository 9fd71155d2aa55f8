// integrator.emit_event and emitEvent (docs/decisions.md §5): fan-out to the tenant's matching active
// subscriptions in the caller's transaction, one pending delivery and one job each; the envelope;
// the data of each kind (identifiers and status only) checked against the document; event:emit.
import t from "tap";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";
import { documentedKinds, webhookSchemaErrors } from "../helpers/webhook-schemas.ts";
import { emitEvent, EVENT_KINDS, type EventDataByKind, type EventKind } from "../../db/events.ts";
import { adminCommands, UsageError } from "../../admin/commands.ts";
import { createSubscription } from "../../db/webhooks/subscriptions.ts";
import { jobsOfDelivery } from "../helpers/webhooks.ts";

let server: TestServer;

t.before(async () => {
  server = await startTestServer(t);
});

async function subscription(tenant: TestTenant, events: string[], active = true): Promise<string> {
  const created = await createSubscription(server.services.db, {
    tenantId: tenant.tenantId,
    url: `https://hooks.example.com/x/${crypto.randomUUID()}`,
    events: events as never,
    secretSealed: server.services.secretBox.seal("whsec_test"),
    createdBy: tenant.subject,
  });
  if (!active)
    await server.services
      .db("integrator.webhook_subscriptions")
      .where({ tenant_id: tenant.tenantId, id: created.id })
      .update({ is_active: false });
  return created.id;
}

const intakeData = (
  overrides: Partial<EventDataByKind["intake.submitted"]> = {},
): EventDataByKind["intake.submitted"] => ({
  submission_id: crypto.randomUUID(),
  external_reference: null,
  module: "claims",
  tier: null,
  status: "received",
  item_count: 2,
  accepted_count: 2,
  failed_count: 0,
  ...overrides,
});

/** Full and minimal data of every kind, as a platform service would emit them. */
function sampleData(kind: EventKind): Record<string, unknown>[] {
  const id = () => crypto.randomUUID();
  switch (kind) {
    case "intake.submitted":
    case "intake.batch_submitted":
      return [
        intakeData({ external_reference: "po-1", tier: "gold", status: "completed_with_errors", failed_count: 1 }),
        intakeData(),
      ];
    case "document.status_changed":
    case "document.uploaded":
    case "document.completed":
      return [
        { document_id: id(), submission_id: id(), item_id: id(), status: "processing", previous_status: "uploaded" },
        { document_id: id(), status: "uploaded" },
      ];
    case "adjudication.case_created":
    case "adjudication.case_resolved":
      return [
        { case_id: id(), document_id: id(), status: "resolved", outcome: "approved" },
        { case_id: id(), status: "open" },
      ];
    case "scorecard.created":
      return [{ scorecard_id: id(), document_id: id(), case_id: id() }, { scorecard_id: id() }];
    case "webhook.endpoint_disabled":
      return [
        { subscription_id: id(), reason: "20 deliveries in a row failed" },
        { subscription_id: id(), reason: "Every attempt failed for 5 days" },
      ];
    case "webhook.delivery_exhausted":
      return [
        {
          delivery_id: id(),
          subscription_id: id(),
          event_id: `evt_${id()}`,
          event_type: "intake.submitted",
          attempts: 3,
          last_response_code: 503,
        },
        {
          delivery_id: id(),
          subscription_id: id(),
          event_id: `evt_${id()}`,
          event_type: "scorecard.created",
          attempts: 1,
          last_response_code: null,
        },
      ];
  }
}

async function deliveriesOf(tenantId: string): Promise<
  {
    id: string;
    subscription_id: string;
    event_id: string;
    status: string;
    attempts: number;
    payload: Record<string, unknown>;
  }[]
> {
  return server.services
    .db("integrator.webhook_deliveries")
    .where({ tenant_id: tenantId })
    .orderBy("created_at")
    .select();
}

/** The tenant's recorded events, oldest first. */
async function eventsOf(
  tenantId: string,
): Promise<{ id: string; event_type: string; payload: Record<string, unknown>; created_at: Date }[]> {
  return server.services
    .db("integrator.webhook_events")
    .where({ tenant_id: tenantId })
    .orderBy("created_at")
    .select("id", "event_type", "payload", "created_at");
}

async function emitFails(tenantId: string, kind: string, data: unknown): Promise<string> {
  try {
    await emitEvent(server.services.db, tenantId, kind as EventKind, data as never);
    return "no error";
  } catch (error) {
    return String((error as Error).message);
  }
}

t.test(
  "emit_event creates one pending delivery per matching active subscription of the tenant: the kind or *",
  async (t) => {
    const tenant = await createTestTenant(server.services);
    const other = await createTestTenant(server.services);
    const byKind = await subscription(tenant, ["intake.submitted"]);
    const wildcard = await subscription(tenant, ["scorecard.created", "*"]);
    await subscription(tenant, ["intake.batch_submitted", "document.uploaded"]);
    await subscription(tenant, ["intake.submitted"], false);
    await subscription(other, ["*"]);
    const count = await emitEvent(server.services.db, tenant.tenantId, "intake.submitted", intakeData());
    t.equal(count, 2);
    const deliveries = await deliveriesOf(tenant.tenantId);
    t.same(deliveries.map((delivery) => delivery.subscription_id).sort(), [byKind, wildcard].sort());
    for (const delivery of deliveries) t.match(delivery, { status: "pending", attempts: 0 });
    t.equal((await deliveriesOf(other.tenantId)).length, 0, "another tenant's subscriptions never match");
    t.equal(
      await emitEvent(
        server.services.db,
        (await createTestTenant(server.services)).tenantId,
        "intake.submitted",
        intakeData(),
      ),
      0,
      "no subscription, no delivery",
    );
  },
);

t.test(
  "an event's deliveries are queued with it, for their first attempt: one deliver_webhooks job for several, a deliver_webhook job for one",
  async (t) => {
    const tenant = await createTestTenant(server.services);
    await subscription(tenant, ["*"]);
    await subscription(tenant, ["*"]);
    await emitEvent(server.services.db, tenant.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() });
    const deliveries = (await deliveriesOf(tenant.tenantId)).map((delivery) => delivery.id);
    t.equal(deliveries.length, 2);
    for (const id of deliveries) {
      const jobs = await jobsOfDelivery(server.services.db, id);
      t.equal(jobs.length, 1, "one job");
      t.equal(jobs[0]?.task, "deliver_webhooks");
      t.same(
        { ...jobs[0]?.payload, delivery_ids: [...(jobs[0]?.payload.delivery_ids ?? [])].sort() },
        { tenant_id: tenant.tenantId, delivery_ids: [...deliveries].sort(), attempts: 0 },
        "naming both deliveries",
      );
    }

    const single = await createTestTenant(server.services);
    await subscription(single, ["*"]);
    await emitEvent(server.services.db, single.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() });
    const [only] = await deliveriesOf(single.tenantId);
    const jobs = await jobsOfDelivery(server.services.db, only?.id ?? "");
    t.same(
      jobs.map((job) => [job.task, job.payload]),
      [["deliver_webhook", { tenant_id: single.tenantId, delivery_id: only?.id, attempts: 0 }]],
    );
  },
);

t.test(
  "an event queued for at least one subscription is recorded once, with its envelope, and every delivery names it",
  async (t) => {
    const tenant = await createTestTenant(server.services);
    await subscription(tenant, ["*"]);
    await subscription(tenant, ["scorecard.created"]);
    const data = { scorecard_id: crypto.randomUUID() };
    t.equal(await emitEvent(server.services.db, tenant.tenantId, "scorecard.created", data), 2);
    const events = await eventsOf(tenant.tenantId);
    t.equal(events.length, 1, "one event for its two deliveries");
    const [event] = events;
    t.equal(event?.event_type, "scorecard.created");
    const deliveries = await deliveriesOf(tenant.tenantId);
    t.same(
      deliveries.map((delivery) => delivery.event_id),
      [event?.id, event?.id],
    );
    t.same(event?.payload, deliveries[0]?.payload, "the event keeps the envelope its deliveries carry");
    t.equal(event?.payload.id, `evt_${event?.id}`);

    await emitEvent(server.services.db, tenant.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() });
    const [, second] = await eventsOf(tenant.tenantId);
    t.not(second?.id, event?.id, "each emission is an event of its own");
  },
);

t.test("* takes every lifecycle kind but no operational one: those go only to subscriptions naming them", async (t) => {
  const tenant = await createTestTenant(server.services);
  const wildcard = await subscription(tenant, ["*"]);
  const naming = await subscription(tenant, ["webhook.endpoint_disabled", "intake.submitted"]);
  await subscription(tenant, ["webhook.delivery_exhausted"]);
  const [disabledData] = sampleData("webhook.endpoint_disabled");
  t.equal(await emitEvent(server.services.db, tenant.tenantId, "webhook.endpoint_disabled", disabledData as never), 1);
  t.same(
    (await deliveriesOf(tenant.tenantId)).map((delivery) => delivery.subscription_id),
    [naming],
    "only the subscription naming the kind",
  );
  t.equal(
    await emitEvent(server.services.db, tenant.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() }),
    1,
  );
  t.equal(
    (await deliveriesOf(tenant.tenantId)).filter((delivery) => delivery.subscription_id === wildcard).length,
    1,
    "while * takes a lifecycle kind",
  );
});

t.test("an event no subscription of the tenant takes is not recorded: no delivery, no event row, no job", async (t) => {
  const tenant = await createTestTenant(server.services);
  await subscription(tenant, ["intake.submitted"]);
  await subscription(tenant, ["*"], false);
  t.equal(
    await emitEvent(server.services.db, tenant.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() }),
    0,
  );
  t.same(await eventsOf(tenant.tenantId), []);
  t.same(await deliveriesOf(tenant.tenantId), []);
});

t.test("emit_event runs in the caller's transaction: a rollback leaves neither deliveries nor jobs", async (t) => {
  const tenant = await createTestTenant(server.services);
  await subscription(tenant, ["*"]);
  const jobsBefore = await server.services.db("graphile_worker._private_jobs").count<{ count: number }[]>("* as count");
  await server.services.db
    .transaction(async (trx) => {
      t.equal(await emitEvent(trx, tenant.tenantId, "intake.submitted", intakeData()), 1);
      throw new Error("the submission failed after the event");
    })
    .catch(() => undefined);
  t.equal((await deliveriesOf(tenant.tenantId)).length, 0);
  t.equal((await eventsOf(tenant.tenantId)).length, 0, "nor the event");
  const jobsAfter = await server.services.db("graphile_worker._private_jobs").count<{ count: number }[]>("* as count");
  t.equal(jobsAfter[0]?.count, jobsBefore[0]?.count);
});

t.test(
  "the payload is the envelope {id, event, tenant_id, timestamp, data}, timestamp in RFC 3339 UTC with milliseconds and Z",
  async (t) => {
    const tenant = await createTestTenant(server.services);
    await subscription(tenant, ["*"]);
    await subscription(tenant, ["*"]);
    const data = intakeData();
    const before = Date.now();
    await emitEvent(server.services.db, tenant.tenantId, "intake.batch_submitted", data);
    const deliveries = await deliveriesOf(tenant.tenantId);
    const [first, second] = deliveries;
    t.same(first?.payload, {
      id: `evt_${first?.event_id}`,
      event: "intake.batch_submitted",
      tenant_id: tenant.tenantId,
      timestamp: first?.payload.timestamp,
      data,
    });
    t.match(
      first?.payload.id,
      /^evt_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      "evt_ and a UUIDv7",
    );
    t.same(second?.payload, first?.payload, "every delivery of one event carries the same envelope, id included");
    t.match(first?.payload.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const at = Date.parse(String(first?.payload.timestamp));
    t.ok(at >= before - 1000 && at <= Date.now() + 1000, "the time of the event");
    t.equal(
      second?.payload.timestamp,
      first?.payload.timestamp,
      "every delivery of one event carries the same timestamp",
    );
  },
);

t.test("intake emits either of its kinds through one call inside its own transaction", async (t) => {
  const tenant = await createTestTenant(server.services);
  await subscription(tenant, ["intake.submitted", "intake.batch_submitted"]);
  // The shape of the intake handlers' call: the kind depends on the route, the data does not.
  const emitIntake = (
    trx: Parameters<typeof emitEvent>[0],
    batch: boolean,
    data: EventDataByKind["intake.submitted"],
  ) => {
    const kind: "intake.submitted" | "intake.batch_submitted" = batch ? "intake.batch_submitted" : "intake.submitted";
    return emitEvent(trx, tenant.tenantId, kind, data);
  };
  const counts = await server.services.db.transaction(async (trx) => [
    await emitIntake(trx, false, intakeData()),
    await emitIntake(trx, true, intakeData({ item_count: 3, accepted_count: 3 })),
  ]);
  t.same(counts, [1, 1]);
  t.same((await deliveriesOf(tenant.tenantId)).map((delivery) => delivery.payload.event).sort(), [
    "intake.batch_submitted",
    "intake.submitted",
  ]);
});

t.test("an unknown event kind is rejected, * included", async (t) => {
  const tenant = await createTestTenant(server.services);
  await subscription(tenant, ["*"]);
  t.match(await emitFails(tenant.tenantId, "intake.deleted", intakeData()), /unknown event kind 'intake.deleted'/);
  t.match(await emitFails(tenant.tenantId, "*", intakeData()), /unknown event kind/);
  t.equal((await deliveriesOf(tenant.tenantId)).length, 0);
});

t.test(
  "no filename, item_metadata or other document content can enter a payload: data holds only the kind's fields",
  async (t) => {
    const tenant = await createTestTenant(server.services);
    await subscription(tenant, ["*"]);
    t.match(
      await emitFails(tenant.tenantId, "intake.submitted", { ...intakeData(), filename: "contract.pdf" }),
      /data field 'filename' is not part of intake.submitted events/,
    );
    t.match(
      await emitFails(tenant.tenantId, "intake.submitted", { ...intakeData(), item_metadata: { patient: "x" } }),
      /'item_metadata' is not part/,
    );
    t.match(
      await emitFails(tenant.tenantId, "document.uploaded", {
        document_id: crypto.randomUUID(),
        status: "uploaded",
        text: "Dear ...",
      }),
      /'text' is not part/,
    );
    t.match(
      await emitFails(tenant.tenantId, "document.uploaded", {
        document_id: crypto.randomUUID(),
        status: { nested: "object" },
      }),
      /'status' must be a string/,
    );
    t.equal((await deliveriesOf(tenant.tenantId)).length, 0);
  },
);

t.test("data missing a required field, or with a mistyped one, is rejected", async (t) => {
  const tenant = await createTestTenant(server.services);
  const { item_count: _dropped, ...withoutCount } = intakeData();
  t.match(await emitFails(tenant.tenantId, "intake.submitted", withoutCount), /'item_count' is required/);
  t.match(
    await emitFails(tenant.tenantId, "intake.submitted", intakeData({ submission_id: "42" })),
    /'submission_id' must be a UUID/,
  );
  t.match(
    await emitFails(tenant.tenantId, "intake.submitted", intakeData({ item_count: -1 })),
    /'item_count' must be a whole number/,
  );
  t.match(
    await emitFails(tenant.tenantId, "intake.submitted", intakeData({ item_count: 1.5 })),
    /'item_count' must be a whole number/,
  );
  t.match(
    await emitFails(tenant.tenantId, "intake.submitted", intakeData({ status: "done" as never })),
    /intake submission status/,
  );
  t.match(
    await emitFails(tenant.tenantId, "document.completed", { document_id: crypto.randomUUID(), status: null }),
    /'status' must not be null/,
  );
  t.match(await emitFails(tenant.tenantId, "scorecard.created", []), /data must be a JSON object/);
});

t.test("every payload is valid against the document's webhooks schema for its kind", async (t) => {
  t.same(
    [...documentedKinds].sort(),
    [...EVENT_KINDS, "webhook.test"].sort(),
    "the document describes every kind (and the test event, sent only on request)",
  );
  const tenant = await createTestTenant(server.services);
  // `*` takes every lifecycle kind; the operational ones only when named.
  await subscription(tenant, ["*", "webhook.endpoint_disabled", "webhook.delivery_exhausted"]);
  for (const kind of EVENT_KINDS) {
    for (const data of sampleData(kind))
      t.equal(await emitEvent(server.services.db, tenant.tenantId, kind, data as never), 1, kind);
  }
  const deliveries = await deliveriesOf(tenant.tenantId);
  t.equal(deliveries.length, EVENT_KINDS.length * 2);
  for (const delivery of deliveries)
    t.same(webhookSchemaErrors(String(delivery.payload.event), delivery.payload), [], String(delivery.payload.event));
});

t.test("admin event:emit queues the deliveries and answers {deliveries: N}", async (t) => {
  const tenant = await createTestTenant(server.services);
  await subscription(tenant, ["scorecard.created"]);
  await subscription(tenant, ["*"]);
  const command = adminCommands["event:emit"];
  if (!command) throw new Error("event:emit is missing");
  const result = await command.run(server.services, {
    tenant: tenant.tenantId,
    kind: "scorecard.created",
    data: JSON.stringify({ scorecard_id: crypto.randomUUID() }),
  });
  t.same(result, { deliveries: 2 });
  t.equal((await deliveriesOf(tenant.tenantId)).length, 2);
});

t.test("admin event:emit refuses an unknown tenant, an unknown kind and data that is not the kind's", async (t) => {
  const tenant = await createTestTenant(server.services);
  const command = adminCommands["event:emit"];
  if (!command) throw new Error("event:emit is missing");
  const run = (flags: Record<string, string>) =>
    command.run(server.services, flags).then(
      () => undefined,
      (error: unknown) => error,
    );
  const data = JSON.stringify({ scorecard_id: crypto.randomUUID() });
  for (const [flags, message] of [
    [{ tenant: crypto.randomUUID(), kind: "scorecard.created", data }, /not an existing tenant/],
    [{ tenant: tenant.tenantId, kind: "scorecard.deleted", data }, /--kind must be one of/],
    [{ tenant: tenant.tenantId, kind: "scorecard.created", data: "{not json" }, /--data must be a JSON object/],
    [{ tenant: tenant.tenantId, kind: "scorecard.created", data: "[1]" }, /--data must be a JSON object/],
    [
      { tenant: tenant.tenantId, kind: "scorecard.created", data: JSON.stringify({ scorecard_id: "x" }) },
      /'scorecard_id' must be a UUID/,
    ],
  ] as const) {
    const error = await run(flags);
    t.ok(error instanceof UsageError, `${JSON.stringify(flags)} is a usage error`);
    t.match((error as Error).message, message);
  }
});
