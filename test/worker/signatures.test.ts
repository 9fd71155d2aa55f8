// worker/signatures.ts: our hex signature and the Standard Webhooks headers, with one secret and with
// several (a rotation's overlap), checked by an outside verifier (the standardwebhooks npm package).
import { createHmac, randomBytes } from "node:crypto";
import t from "tap";
import { Webhook } from "standardwebhooks";
import { signatureHeaders } from "../../worker/signatures.ts";
import { newWebhookSecret, webhookSecretKey } from "../../foundation/signing.ts";

const newSecret = newWebhookSecret;
const lower = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));

t.test("a new secret is whsec_ and 32 random bytes in standard base64, and its key is those bytes", async (t) => {
  const secret = newWebhookSecret();
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.same(webhookSecretKey(secret), Buffer.from(secret.slice(6), "base64"));
  t.equal(webhookSecretKey(secret).length, 32);
});

t.test("a secret made before (base64url) keeps its key: the 32 bytes its text encodes", async (t) => {
  for (let i = 0; i < 200; i++) {
    const bytes = randomBytes(32);
    t.same(webhookSecretKey(`whsec_${bytes.toString("base64url")}`), bytes);
  }
});

t.test(
  "new Webhook(secret) of the standardwebhooks package takes every new secret exactly as shown and verifies its signatures",
  async (t) => {
    const body = '{"event":"intake.submitted"}';
    let verified = 0;
    for (let i = 0; i < 2000; i++) {
      const secret = newWebhookSecret();
      const message = { id: `evt_${i}`, timestamp: Math.floor(Date.now() / 1000), body };
      const headers = lower(signatureHeaders([secret], message));
      const payload = new Webhook(secret).verify(body, headers) as { event?: string };
      if (payload.event === "intake.submitted") verified++;
    }
    t.equal(verified, 2000, "2000 of 2000 secrets");
  },
);

t.test("one secret: our header is exactly the hex HMAC of the body, and standardwebhooks verifies", async (t) => {
  const secret = newSecret();
  const body = '{"a":1,"b":"ü"}';
  const message = { id: crypto.randomUUID(), timestamp: Math.floor(Date.now() / 1000), body };
  const headers = lower(signatureHeaders([secret], message));
  t.equal(headers["x-service-review-signature"], createHmac("sha256", secret).update(body).digest("hex"));
  t.equal(headers["webhook-id"], message.id);
  t.equal(headers["webhook-timestamp"], String(message.timestamp));
  t.match(headers["webhook-signature"], /^v1,[A-Za-z0-9+/]{43}=$/);
  t.same(new Webhook(secret).verify(body, headers), { a: 1, b: "ü" });
  t.throws(() => new Webhook(newSecret()).verify(body, headers), "another secret does not verify");
  t.throws(() => new Webhook(secret).verify(body.replace("1", "2"), headers), "a changed body does not verify");
  t.throws(
    () => new Webhook(secret).verify(body, { ...headers, "webhook-id": crypto.randomUUID() }),
    "the id is signed",
  );
  t.throws(
    () =>
      new Webhook(secret).verify(body, {
        ...headers,
        "webhook-timestamp": String(message.timestamp + 1),
      }),
    "the timestamp is signed",
  );
  const old = lower(signatureHeaders([secret], { ...message, timestamp: message.timestamp - 3600 }));
  t.throws(() => new Webhook(secret).verify(body, old), /too old/, "an hour-old message is refused");
});

t.test(
  "several secrets (rotation overlap): both headers carry one signature per secret, newest first, and each secret verifies",
  async (t) => {
    const [fresh, old] = [newSecret(), newSecret()];
    const body = '{"event":"x"}';
    const message = { id: crypto.randomUUID(), timestamp: Math.floor(Date.now() / 1000), body };
    const headers = lower(signatureHeaders([fresh, old], message));
    t.equal(
      headers["x-service-review-signature"],
      [fresh, old].map((secret) => createHmac("sha256", secret).update(body).digest("hex")).join(","),
      "ours: hex digests separated by commas, newest first",
    );
    const entries = headers["webhook-signature"]?.split(" ") ?? [];
    t.equal(entries.length, 2, "Standard Webhooks: entries separated by a space");
    t.equal(entries[0], lower(signatureHeaders([fresh], message))["webhook-signature"], "newest first");
    t.same(new Webhook(fresh).verify(body, headers), { event: "x" }, "the new secret verifies");
    t.same(new Webhook(old).verify(body, headers), { event: "x" }, "the old secret verifies");
    t.throws(() => new Webhook(newSecret()).verify(body, headers));
  },
);
