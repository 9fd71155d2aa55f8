// The worker keeps a subscription's opened secret (by its sealed text) and a URL's verdict (by its
// text) between attempts: a change of either takes effect from the next delivery on.
import t from "tap";
import { createHmac } from "node:crypto";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);

t.test("a subscription whose secret changes signs its next delivery with the new secret", async (t) => {
  const rig = await startWebhookRig(t, ca);
  const { id, secret } = await rig.subscribe(rig.receiver.url("/secret"));
  const signatureOf = (body: Buffer, key: string) => createHmac("sha256", key).update(body).digest("hex");

  await rig.emitIntake();
  const [first] = await waitFor(
    async () => rig.receiver.receivedAt("/secret"),
    (received) => received.length === 1,
  );
  t.equal(first?.headers["x-service-review-signature"], signatureOf(first?.rawBody ?? Buffer.alloc(0), secret));

  const next = "whsec_rotated-in-the-database";
  await rig.server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: rig.tenant.tenantId, id })
    .update({ secret_encrypted: rig.server.services.secretBox.seal(next) });
  await rig.emitIntake();
  const received = await waitFor(
    async () => rig.receiver.receivedAt("/secret"),
    (all) => all.length === 2,
  );
  const second = received[1];
  t.equal(second?.headers["x-service-review-signature"], signatureOf(second?.rawBody ?? Buffer.alloc(0), next));
});

t.test("a subscription whose URL changes to one the URL rule refuses is not sent to", async (t) => {
  const rig = await startWebhookRig(t, ca, { env: { MAX_DELIVERY_ATTEMPTS: "1" } });
  const { id } = await rig.subscribe(rig.receiver.url("/url"));
  await rig.emitIntake();
  await waitFor(
    async () => rig.receiver.receivedAt("/url"),
    (received) => received.length === 1,
  );
  await rig.server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: rig.tenant.tenantId, id })
    .update({ url: "http://hooks.test.example/url" });
  await rig.emitIntake();
  const delivery = await waitFor(
    async () => (await rig.deliveries()).filter((d) => d.subscription_id === id && d.status === "failed"),
    (failed) => failed.length === 1,
  );
  t.match(delivery[0]?.error_message, /^Target not allowed$/);
  t.equal(rig.receiver.receivedAt("/url").length, 1, "only the first delivery arrived");
});
