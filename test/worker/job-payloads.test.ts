// A deliver_webhook payload is checked before the task trusts it: anything sharing the database can queue jobs.
import t from "tap";
import { isDeliverWebhookPayload, isDeliverWebhooksPayload } from "../../db/jobs.ts";

const tenant_id = "0192b6a2-7c1e-7d3a-8f00-5a1b2c3d4e5f";
const delivery_id = "0192b6a2-7c1e-7d3a-8f00-6a1b2c3d4e5f";

t.test("a payload names a tenant and a delivery by uuid, and the attempt it is for when it says one", async (t) => {
  t.ok(isDeliverWebhookPayload({ tenant_id, delivery_id, attempts: 0 }));
  t.ok(isDeliverWebhookPayload({ tenant_id, delivery_id, attempts: 3 }));
  t.ok(isDeliverWebhookPayload({ tenant_id, delivery_id }), "a job queued before migration 0021 has no attempts");
  for (const attempts of [-1, 1.5, "1", null, Number.NaN, 2 ** 60])
    t.notOk(isDeliverWebhookPayload({ tenant_id, delivery_id, attempts }), `attempts ${String(attempts)} is refused`);
  t.notOk(isDeliverWebhookPayload({ tenant_id, delivery_id: "not-a-uuid" }));
  t.notOk(isDeliverWebhookPayload({ delivery_id }));
  t.notOk(isDeliverWebhookPayload(null));
  t.notOk(isDeliverWebhookPayload([tenant_id, delivery_id]));
});

t.test("an event's job names its tenant, one or more deliveries by uuid, and the attempt they are for", async (t) => {
  const other = "0192b6a2-7c1e-7d3a-8f00-7a1b2c3d4e5f";
  t.ok(isDeliverWebhooksPayload({ tenant_id, delivery_ids: [delivery_id, other], attempts: 0 }));
  t.notOk(isDeliverWebhooksPayload({ tenant_id, delivery_ids: [], attempts: 0 }), "no delivery");
  t.notOk(isDeliverWebhooksPayload({ tenant_id, delivery_ids: [delivery_id, "nope"], attempts: 0 }));
  t.notOk(isDeliverWebhooksPayload({ tenant_id, delivery_ids: delivery_id, attempts: 0 }), "not a list");
  t.notOk(isDeliverWebhooksPayload({ tenant_id, delivery_ids: [delivery_id] }), "no attempts");
  t.notOk(isDeliverWebhooksPayload({ tenant_id, delivery_ids: [delivery_id], attempts: -1 }));
  t.notOk(isDeliverWebhooksPayload({ delivery_ids: [delivery_id], attempts: 0 }));
  t.notOk(isDeliverWebhooksPayload(null));
});
