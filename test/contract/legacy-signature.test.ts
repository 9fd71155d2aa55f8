// X-Service-Review-Signature signs the body alone, so a captured delivery verifies again whenever it is
// replayed; webhook-signature (Standard Webhooks) signs the id and the timestamp with it. The document
// marks the legacy header deprecated with that reason, and docs/integrating.md tells receivers which
// one is replay-safe.
import fs from "node:fs";
import path from "node:path";
import { newWebhookSecret } from "../../foundation/signing.ts";
import t from "tap";
import { Webhook } from "standardwebhooks";
import { loadDocument } from "../../http/openapi-document.ts";
import { signatureHeaders } from "../../worker/signatures.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");

interface HeaderParameter {
  name: string;
  deprecated?: boolean;
  description?: string;
}

t.test("the document marks X-Service-Review-Signature deprecated, with the reason, on every webhook", async (t) => {
  const document = loadDocument() as unknown as {
    components: { parameters: Record<string, HeaderParameter> };
    webhooks: Record<string, { post: { parameters: ({ $ref: string } | HeaderParameter)[] } }>;
  };
  const legacy = Object.values(document.components.parameters).find(
    (parameter) => parameter.name === "X-Service-Review-Signature",
  );
  t.equal(legacy?.deprecated, true, "deprecated: true");
  t.match(legacy?.description ?? "", /body (alone|only)/i, "says what it signs");
  t.match(legacy?.description ?? "", /replay/i, "says why that is unsafe");
  t.match(legacy?.description ?? "", /webhook-signature/, "names the replacement");
  const standard = Object.values(document.components.parameters).find(
    (parameter) => parameter.name === "webhook-signature",
  );
  t.notOk(standard?.deprecated, "webhook-signature is not deprecated");
  for (const [name, webhook] of Object.entries(document.webhooks)) {
    const names = webhook.post.parameters.map((parameter) =>
      "$ref" in parameter
        ? document.components.parameters[parameter.$ref.split("/").at(-1) ?? ""]?.name
        : parameter.name,
    );
    t.ok(names.includes("X-Service-Review-Signature") && names.includes("webhook-signature"), `${name}: both headers`);
  }
});

t.test("docs/integrating.md tells receivers that webhook-signature is the replay-safe one", async (t) => {
  const guide = fs.readFileSync(path.join(ROOT, "docs/integrating.md"), "utf8");
  const receiving = guide.slice(guide.indexOf("### Receiving webhooks"));
  t.match(receiving, /`X-Service-Review-Signature`[^.]*deprecated/i);
  t.match(receiving, /`webhook-signature`[^.]*replay/i);
});

t.test(
  "the reason holds: the legacy header of an hour-old attempt is the one of a fresh attempt, the standard one is refused",
  async (t) => {
    const secret = newWebhookSecret();
    const body = JSON.stringify({ event: "webhook.test", tenant_id: crypto.randomUUID(), timestamp: "x", data: {} });
    const id = crypto.randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const captured = signatureHeaders([secret], { id, timestamp: now - 3600, body });
    const fresh = signatureHeaders([secret], { id, timestamp: now, body });
    t.equal(
      captured["X-Service-Review-Signature"],
      fresh["X-Service-Review-Signature"],
      "the legacy signature names no time: a captured one passes whenever it is replayed",
    );
    const standard = new Webhook(secret);
    t.doesNotThrow(() => standard.verify(body, fresh), "a fresh attempt verifies");
    t.throws(() => standard.verify(body, captured), "an hour-old attempt is refused by its signed timestamp");
  },
);
