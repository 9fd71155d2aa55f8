// A test server with a real graphile-worker and a real HTTPS receiver on loopback (its certificate
// signed by a test CA made at run time), wired together the way docs/decisions.md §5 allows for tests:
// WEBHOOK_RESOLVE points hooks.test.example at 127.0.0.1, WEBHOOK_CA_FILE trusts the test CA. The receiver
// checks every delivery against the document's webhooks section (body and headers): one that does not
// match fails the test that started the rig.
import type { Knex } from "knex";
import type { DestinationStream } from "pino";
import type { Test } from "tap";
import { startWorker } from "../../worker/runner.ts";
import { JOB } from "../../db/jobs.ts";
import { emitEvent, type EventDataByKind } from "../../db/events.ts";
import type { DeliveryView, SubscriptionView } from "../../db/webhooks/views.ts";
import {
  makeTestCa,
  RECEIVER_HOST,
  startReceiver,
  type Answer,
  type Receiver,
  type ReceivedRequest,
  type TestCa,
} from "./https-receiver.ts";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "./server.ts";
import { webhookRequestErrors } from "./webhook-schemas.ts";
import { waitFor } from "./wait.ts";

/** The tasks that send deliveries: one delivery each, or an event's (integrator.queue_delivery_jobs). */
const DELIVERY_TASKS = [JOB.deliverWebhook, JOB.deliverWebhooks];

/**
 * A queued delivery job as graphile-worker stores it (`attempts` is graphile-worker's count, the payload's
 * is ours): a deliver_webhook job names one delivery, a deliver_webhooks job an event's (queue_delivery_jobs).
 */
export interface QueuedDeliveryJob {
  id: string;
  task: (typeof DELIVERY_TASKS)[number];
  payload: { tenant_id: string; delivery_id?: string; delivery_ids?: string[]; attempts?: number };
  run_at: Date;
  attempts: number;
  max_attempts: number;
  locked_at: Date | null;
  key: string | null;
  priority: number;
  flags: Record<string, boolean> | null;
}

/**
 * The delivery jobs queued for any of these deliveries, in the order graphile-worker takes them (priority,
 * then oldest), read from its own tables: its view hides payloads.
 */
export function deliveryJobs(db: Knex, deliveryIds: readonly string[]): Promise<QueuedDeliveryJob[]> {
  const ids = [...deliveryIds];
  return db("graphile_worker._private_jobs as j")
    .join("graphile_worker._private_tasks as k", "k.id", "j.task_id")
    .whereIn("k.identifier", DELIVERY_TASKS)
    .whereRaw(
      `(j.payload->>'delivery_id' = any (?)
        or case when json_typeof(j.payload->'delivery_ids') = 'array'
                then exists (select 1 from json_array_elements_text(j.payload->'delivery_ids') e(id) where e.id = any (?))
                else false end)`,
      [ids, ids],
    )
    .orderBy(["j.priority", "j.id"])
    .select(
      "j.id",
      "k.identifier as task",
      "j.payload",
      "j.run_at",
      "j.attempts",
      "j.max_attempts",
      "j.locked_at",
      "j.key",
      "j.priority",
      "j.flags",
    );
}

/** The delivery jobs queued for one delivery. */
export const jobsOfDelivery = (db: Knex, deliveryId: string): Promise<QueuedDeliveryJob[]> =>
  deliveryJobs(db, [deliveryId]);

/** The data of an intake.submitted event: one accepted item of a new submission; `overrides` change fields. */
export function intakeEventData(
  overrides: Partial<EventDataByKind["intake.submitted"]> = {},
): EventDataByKind["intake.submitted"] {
  return {
    submission_id: crypto.randomUUID(),
    external_reference: null,
    module: null,
    tier: null,
    status: "received",
    item_count: 1,
    accepted_count: 1,
    failed_count: 0,
    ...overrides,
  };
}

export interface WebhookRig {
  server: TestServer;
  receiver: Receiver;
  tenant: TestTenant;
  /** Subscribes through the API; returns the id and the secret. */
  subscribe(url: string, events?: string[]): Promise<{ id: string; secret: string }>;
  /** One of the rig tenant's subscriptions as the API shows it (GET); throws unless 200. */
  subscription(id: string): Promise<SubscriptionView>;
  /** The rig tenant's subscriptions as the API lists them. */
  subscriptions(): Promise<SubscriptionView[]>;
  /** Emits an intake.submitted event for the rig's tenant; returns its data. */
  emitIntake(): Promise<EventDataByKind["intake.submitted"]>;
  /** The rig tenant's deliveries through the API, newest first. */
  deliveries(): Promise<DeliveryView[]>;
  /** Polls the API until the subscription's delivery is final (or the deadline passes). */
  finalDelivery(subscriptionId: string, seconds?: number): Promise<DeliveryView | undefined>;
  /** Waits until no delivery job (deliver_webhook or deliver_webhooks) is left, queued or running. */
  jobsDrained(seconds?: number): Promise<number>;
}

/** One test CA per test file. */
export function testCa(t: Test): TestCa {
  const ca = makeTestCa();
  t.teardown(() => ca.remove());
  return ca;
}

export function webhookEnv(ca: TestCa, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    // Retries at once: the schedule has tests of its own.
    WEBHOOK_RETRY_SCHEDULE: "0s",
    WEBHOOK_RESOLVE: `${RECEIVER_HOST}=127.0.0.1`,
    WEBHOOK_CA_FILE: ca.caFile,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    // The loopback receivers listen on ephemeral ports.
    WEBHOOK_ALLOWED_PORTS: "443,1024-65535",
    // One rig tenant subscribes many receivers' paths in a test file; the limit has tests of its own.
    WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT: "10000",
    ...overrides,
  };
}

export async function startWebhookRig(
  t: Test,
  ca: TestCa,
  options: {
    env?: Record<string, string>;
    answer?: (request: ReceivedRequest, countForPath: number) => Answer;
    worker?: boolean;
    /** Receives the service's JSON log lines (the worker's included). */
    logDestination?: DestinationStream;
  } = {},
): Promise<WebhookRig> {
  const server = await startTestServer(t, {
    env: webhookEnv(ca, options.env),
    ...(options.logDestination ? { logDestination: options.logDestination } : {}),
  });
  // Every delivery the worker sends is checked against the document's webhooks section as it arrives.
  const receiver = await startReceiver(ca, options.answer, {
    onRequest: (request) => {
      const problems = webhookRequestErrors(request);
      if (problems.length > 0)
        t.fail(`the delivery to ${request.path} does not match the document's webhooks section`, { problems });
    },
  });
  t.teardown(() => receiver.close());
  if (options.worker !== false) {
    const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
    t.teardown(() => worker.stop());
  }
  const tenant = await createTestTenant(server.services);
  const deliveries = async (): Promise<DeliveryView[]> => {
    const res = await server.request("/v1/webhooks/deliveries?limit=200", { token: tenant.token });
    if (res.status !== 200) throw new Error(`deliveries answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { deliveries: DeliveryView[] }).deliveries;
  };
  return {
    server,
    receiver,
    tenant,
    async subscribe(url, events = ["*"]) {
      const res = await server.request("/v1/webhooks/subscriptions", {
        method: "POST",
        token: tenant.token,
        json: { url, events },
      });
      if (res.status !== 201) throw new Error(`subscribe answered ${res.status}: ${await res.text()}`);
      return (await res.json()) as { id: string; secret: string };
    },
    async subscription(id) {
      const res = await server.request(`/v1/webhooks/subscriptions/${id}`, { token: tenant.token });
      if (res.status !== 200) throw new Error(`get answered ${res.status}`);
      return (await res.json()) as SubscriptionView;
    },
    async subscriptions() {
      const res = await server.request("/v1/webhooks/subscriptions", { token: tenant.token });
      if (res.status !== 200) throw new Error(`list answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { subscriptions: SubscriptionView[] }).subscriptions;
    },
    async emitIntake() {
      const data = intakeEventData({ external_reference: "order-4711", module: "claims", tier: "standard" });
      await server.services.db.transaction((trx) => emitEvent(trx, tenant.tenantId, "intake.submitted", data));
      return data;
    },
    deliveries,
    async finalDelivery(subscriptionId, seconds = 20) {
      const find = async () => (await deliveries()).find((delivery) => delivery.subscription_id === subscriptionId);
      return waitFor(find, (delivery) => delivery !== undefined && delivery.status !== "pending", { seconds });
    },
    async jobsDrained(seconds = 20) {
      const count = async () =>
        Number(
          (
            await server.services
              .db("graphile_worker.jobs")
              .whereIn("task_identifier", DELIVERY_TASKS)
              .count<{ count: number }[]>("* as count")
          )[0]?.count ?? 0,
        );
      return waitFor(count, (left) => left === 0, { seconds });
    },
  };
}
