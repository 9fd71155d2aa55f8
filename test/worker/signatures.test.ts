// worker/signatures.ts: our hex signature and the Standard Webhooks headers, with one secret and with
// several (a rotation's overlap), checked by an outside verifier (the standardwebhooks npm package).
import { createHmac, randomBytes } from "node:crypto";
import t from "tap";
import { Webhook } from "standardwebhooks";
import { signatureHeaders, standardWebhooksKey } from "../../worker/signatures.ts";

const newSecret = () => `whsec_${randomBytes(32).toString("base64url")}`;
/** The form libraries that read standard base64 after whsec_ take: the same 32 key bytes. */
const asStandardBase64 = (secret: string) => `whsec_${Buffer.from(secret.slice(6), "base64url").toString("base64")}`;
const lower = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));

t.test("the Standard Webhooks key is the 32 bytes the secret's base64url text encodes", async (t) => {
  const bytes = randomBytes(32);
  const secret = `whsec_${bytes.toString("base64url")}`;
  t.same(standardWebhooksKey(secret), bytes);
  t.equal(standardWebhooksKey(secret).length, 32);
});

t.test("one secret: our header is exactly the hex HMAC of the body, and standardwebhooks verifies", async (t) => {
  const secret = newSecret();
  const body = '{"a":1,"b":"ü"}';
  const message = { id: crypto.randomUUID(), timestamp: Math.floor(Date.now() / 1000), body };
  const headers = lower(signatureHeaders([secret], message));
  t.equal(headers["x-service-review-signature"], createHmac("sha256", secret).update(body).digest("hex"));
  t.equal(headers["webhook-id"], message.id);
  t.equal(headers["webhook-timestamp"], String(message.timestamp));
  t.match(headers["webhook-signature"], /^v1,[A-Za-z0-9+/]{43}=$/);
  t.same(new Webhook(asStandardBase64(secret)).verify(body, headers), { a: 1, b: "ü" });
  t.throws(() => new Webhook(asStandardBase64(newSecret())).verify(body, headers), "another secret does not verify");
  t.throws(
    () => new Webhook(asStandardBase64(secret)).verify(body.replace("1", "2"), headers),
    "a changed body does not verify",
  );
  t.throws(
    () => new Webhook(asStandardBase64(secret)).verify(body, { ...headers, "webhook-id": crypto.randomUUID() }),
    "the id is signed",
  );
  t.throws(
    () =>
      new Webhook(asStandardBase64(secret)).verify(body, {
        ...headers,
        "webhook-timestamp": String(message.timestamp + 1),
      }),
    "the timestamp is signed",
  );
  const old = lower(signatureHeaders([secret], { ...message, timestamp: message.timestamp - 3600 }));
  t.throws(() => new Webhook(asStandardBase64(secret)).verify(body, old), /too old/, "an hour-old message is refused");
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
    t.same(new Webhook(asStandardBase64(fresh)).verify(body, headers), { event: "x" }, "the new secret verifies");
    t.same(new Webhook(asStandardBase64(old)).verify(body, headers), { event: "x" }, "the old secret verifies");
    t.throws(() => new Webhook(asStandardBase64(newSecret())).verify(body, headers));
  },
);
