// Every delivery a webhook test receives is checked against the document's webhooks section (body by
// event kind, every declared header, the event header matching the body): the rig's receiver does it
// on arrival (test/helpers/webhooks.ts). Here the check itself: a real delivery passes, a request that
// breaks the section fails the test that started the rig, naming what is wrong.
import fs from "node:fs";
import https from "node:https";
import t, { type Test } from "tap";
import { RECEIVER_HOST, type ReceivedRequest } from "../helpers/https-receiver.ts";
import { startWebhookRig, testCa, type WebhookRig } from "../helpers/webhooks.ts";
import { webhookRequestErrors } from "../helpers/webhook-schemas.ts";

const ca = testCa(t);

/** `t` with its `fail` captured instead of reported, to see what the rig reports. */
function watched(t: Test, failures: { message: string; extra: unknown }[]): Test {
  return new Proxy(t, {
    get(target, property) {
      if (property === "fail")
        return (message: string, extra: unknown) => {
          failures.push({ message, extra });
          return true;
        };
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** POSTs a body straight to the rig's receiver, as a sender that ignores the document would. */
function postToReceiver(rig: WebhookRig, pathname: string, body: string, headers: Record<string, string>) {
  const url = new URL(rig.receiver.url(pathname));
  return new Promise<number>((resolve, reject) => {
    const request = https.request(
      {
        host: "127.0.0.1",
        servername: RECEIVER_HOST,
        port: url.port,
        path: url.pathname,
        method: "POST",
        ca: fs.readFileSync(ca.caFile),
        headers: { "Content-Type": "application/json", ...headers },
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

t.test("the rig checks each delivery against the webhooks section as it arrives", async (t) => {
  const failures: { message: string; extra: unknown }[] = [];
  const rig = await startWebhookRig(watched(t, failures), ca);

  const path = `/contract-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path), ["intake.submitted"]);
  await rig.emitIntake();
  t.match(await rig.finalDelivery(id), { status: "delivered" });
  const [delivered] = rig.receiver.receivedAt(path);
  if (!delivered) return t.fail("nothing was delivered");
  t.same(webhookRequestErrors(delivered), [], "a real delivery matches the document");
  t.same(failures, [], "and the rig reported nothing");

  const forged = JSON.stringify({ event: "intake.submitted", tenant_id: "not-a-uuid", data: { submission_id: 1 } });
  t.equal(await postToReceiver(rig, "/forged", forged, { "X-Service-Review-Event": "intake.submitted" }), 204);
  t.equal(failures.length, 1, "a request that breaks the section fails the rig's test");
  t.match(failures[0]?.message, "the delivery to /forged does not match the document's webhooks section");
  const problems = (failures[0]?.extra as { problems: string[] }).problems.join("\n");
  t.match(problems, "header x-service-review-signature is missing");
  t.match(problems, "header webhook-id is missing");
  t.match(problems, /body \/tenant_id must match format "uuid"/);
  t.match(problems, /body \/data\/submission_id must be string/);
});

t.test("what the check looks at, on a real delivery changed one way at a time", async (t) => {
  const rig = await startWebhookRig(t, ca);
  const path = `/mutations-${crypto.randomUUID()}`;
  const { id } = await rig.subscribe(rig.receiver.url(path), ["*"]);
  await rig.emitIntake();
  await rig.finalDelivery(id);
  const [delivered] = rig.receiver.receivedAt(path);
  if (!delivered) return t.fail("nothing was delivered");
  const body = JSON.parse(delivered.rawBody.toString("utf8")) as Record<string, unknown>;
  const changed = (change: Partial<ReceivedRequest>) => webhookRequestErrors({ ...delivered, ...change });

  t.match(changed({ headers: { ...delivered.headers, "x-service-review-event": "intake.batch_submitted" } }), [
    "X-Service-Review-Event intake.batch_submitted is not the body's event intake.submitted",
  ]);
  t.match(changed({ headers: { ...delivered.headers, "webhook-timestamp": "soon" } }), [
    'header webhook-timestamp "soon" does not match its schema',
  ]);
  t.match(changed({ rawBody: Buffer.from(JSON.stringify({ ...body, sent_by: "worker" })) }), [
    /^body \/ must NOT have additional properties/,
  ]);
  t.match(changed({ rawBody: Buffer.from(JSON.stringify({ ...body, event: "intake.submited" })) }), [
    /is not the body's event intake\.submited/,
    "body the document has no webhook intake.submited",
  ]);
  t.match(changed({ method: "PUT" }), ["method PUT, not POST"]);
});
