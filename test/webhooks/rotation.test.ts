// Secret rotation: the new secret is shown once and stored sealed; during the overlap
// window (WEBHOOK_SECRET_ROTATION_OVERLAP_HOURS) the delivery task is handed both the new and the previous
// secret, newest first, and afterwards only the new one; deliveries verify with the new secret.
import t from "tap";
import { hmacSha256Hex } from "../../foundation/signing.ts";
import { findDeliveryToSend } from "../../db/webhooks/sending.ts";
import type { ReceivedRequest } from "../helpers/https-receiver.ts";
import { createTestTenant } from "../helpers/server.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";

const ca = testCa(t);
let rig: WebhookRig;

t.before(async () => {
  rig = await startWebhookRig(t, ca);
});

interface Rotated {
  id: string;
  secret: string;
  previous_secret_expires_at: string | null;
  status: string;
}

async function rotate(id: string, token = rig.tenant.token): Promise<Response> {
  return rig.server.request(`/v1/webhooks/subscriptions/${id}/rotate-secret`, { method: "POST", token });
}

async function sealedColumns(id: string) {
  return rig.server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: rig.tenant.tenantId, id })
    .first("secret_encrypted", "previous_secret_encrypted", "previous_secret_expires_at");
}

t.test(
  "rotation answers 200 with a new whsec_ secret, shown this once, and the end of the overlap window",
  async (t) => {
    const { id, secret: old } = await rig.subscribe(rig.receiver.url(`/rotate-${crypto.randomUUID()}`));
    const before = Date.now();
    const res = await rotate(id);
    t.equal(res.status, 200);
    const rotated = (await res.json()) as Rotated;
    t.match(rotated.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    t.not(rotated.secret, old);
    const expires = Date.parse(rotated.previous_secret_expires_at ?? "");
    t.ok(Math.abs(expires - (before + 24 * 3_600_000)) < 60_000, "24 hours from now by default");
    const got: Record<string, unknown> = await rig.subscription(id);
    t.notOk("secret" in got, "not shown again");
    t.equal(got.previous_secret_expires_at, rotated.previous_secret_expires_at);
  },
);

t.test("both secrets are stored sealed: no column holds either secret", async (t) => {
  const { id, secret: old } = await rig.subscribe(rig.receiver.url(`/sealed-${crypto.randomUUID()}`));
  const rotated = (await (await rotate(id)).json()) as Rotated;
  const row = await sealedColumns(id);
  const text = JSON.stringify(row);
  t.notOk(text.includes(old.slice(6)) || text.includes(rotated.secret.slice(6)), "neither secret in clear");
  t.equal(rig.server.services.secretBox.open(row.secret_encrypted), rotated.secret);
  t.equal(rig.server.services.secretBox.open(row.previous_secret_encrypted), old);
});

t.test(
  "during the overlap window the delivery task gets the new and the previous secret, newest first; after it only the new",
  async (t) => {
    const { id, secret: old } = await rig.subscribe(rig.receiver.url(`/window-${crypto.randomUUID()}`));
    const rotated = (await (await rotate(id)).json()) as Rotated;
    const [delivery] = await rig.server.services
      .db("integrator.webhook_deliveries")
      .insert({
        tenant_id: rig.tenant.tenantId,
        subscription_id: id,
        event_id: crypto.randomUUID(),
        event_type: "webhook.test",
        payload: JSON.stringify({ event: "webhook.test" }),
        status: "failed",
      })
      .returning("id");
    const secrets = async () => {
      const found = await findDeliveryToSend(rig.server.services.db, rig.tenant.tenantId, delivery.id);
      return (found?.secrets_encrypted ?? []).map((sealed) => rig.server.services.secretBox.open(sealed));
    };
    t.same(await secrets(), [rotated.secret, old], "both during the window");
    await rig.server.services
      .db("integrator.webhook_subscriptions")
      .where({ tenant_id: rig.tenant.tenantId, id })
      .update({ previous_secret_expires_at: new Date(Date.now() - 1000) });
    t.same(await secrets(), [rotated.secret], "only the new one after it");
    const shown = await rig.subscription(id);
    t.equal(shown.previous_secret_expires_at, null, "no window is shown once it closed");
  },
);

t.test("rotating again within the window drops the oldest secret at once", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/twice-${crypto.randomUUID()}`));
  const first = (await (await rotate(id)).json()) as Rotated;
  const second = (await (await rotate(id)).json()) as Rotated;
  const row = await sealedColumns(id);
  t.equal(rig.server.services.secretBox.open(row.secret_encrypted), second.secret);
  t.equal(rig.server.services.secretBox.open(row.previous_secret_encrypted), first.secret);
});

t.test("a delivery after rotation is signed with the new secret and verifies with it", async (t) => {
  const path = `/after-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path), ["intake.submitted"]);
  const rotated = (await (await rotate(id)).json()) as Rotated;
  await rig.emitIntake();
  const [request] = await waitFor(
    async (): Promise<ReceivedRequest[]> => rig.receiver.receivedAt(path),
    (requests) => requests.length > 0,
  );
  if (!request) return t.fail("nothing received");
  const signatures = String(request.headers["x-service-review-signature"]).split(/[ ,]+/);
  t.ok(
    signatures.includes(hmacSha256Hex(rotated.secret, request.rawBody.toString("utf8"))),
    "the new secret's signature",
  );
});

t.test("with WEBHOOK_SECRET_ROTATION_OVERLAP_HOURS=0 the previous secret stops signing at once", async (t) => {
  const { startTestServer } = await import("../helpers/server.ts");
  const server = await startTestServer(t, { env: { WEBHOOK_SECRET_ROTATION_OVERLAP_HOURS: "0" } });
  const who = await createTestTenant(server.services);
  const created = await server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: who.token,
    json: { url: "https://hooks.example.com/no-overlap", events: ["*"] },
  });
  const { id } = (await created.json()) as { id: string };
  const res = await server.request(`/v1/webhooks/subscriptions/${id}/rotate-secret`, {
    method: "POST",
    token: who.token,
  });
  t.equal(res.status, 200);
  t.equal(((await res.json()) as Rotated).previous_secret_expires_at, null);
  const row = await server.services
    .db("integrator.webhook_subscriptions")
    .where({ tenant_id: who.tenantId, id })
    .first();
  t.equal(row.previous_secret_encrypted, null, "no previous secret is kept");
});

t.test("rotating a foreign, deleted or unknown subscription is 404 and changes nothing", async (t) => {
  const { id } = await rig.subscribe(rig.receiver.url(`/foreign-${crypto.randomUUID()}`));
  const before = await sealedColumns(id);
  const stranger = await createTestTenant(rig.server.services);
  t.equal((await rotate(id, stranger.token)).status, 404);
  t.equal((await rotate(crypto.randomUUID())).status, 404);
  t.equal((await rotate("nope")).status, 404);
  t.same(await sealedColumns(id), before, "unchanged");
});
