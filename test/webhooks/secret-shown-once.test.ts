// The signing secret is shown once: the create and rotate-secret answers carry it, every other answer about
// a subscription is a `WebhookSubscription`, a closed object without `secret`. The document says so in a way
// every generator reads (no boolean `false` schema), and the response validation the tests run holds the
// service to it: a handler that let `secret` slip into any of those answers fails.
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { handlers } from "../../handlers/index.ts";
import type { HandlerTable } from "../../http/operations.ts";
import { ROOT } from "../../scripts/contract-package.ts";

const LEAKED = "whsec_bGVha2VkLXNlY3JldC1ub3QtdG8tYmUtc2hvd24tYWdhaW4=";

/** The real handlers, but the five answers that must not carry the secret carry it. */
function leaking(): HandlerTable {
  const withSecret = <B extends object>(body: B) => ({ ...body, secret: LEAKED });
  return {
    ...handlers,
    listWebhookSubscriptions: async (call) => {
      const reply = await handlers.listWebhookSubscriptions(call);
      if (reply.status !== 200) return reply;
      return { ...reply, body: { ...reply.body, subscriptions: reply.body.subscriptions.map(withSecret) } };
    },
    getWebhookSubscription: async (call) => {
      const reply = await handlers.getWebhookSubscription(call);
      return reply.status === 200 ? { ...reply, body: withSecret(reply.body) } : reply;
    },
    updateWebhookSubscription: async (call) => {
      const reply = await handlers.updateWebhookSubscription(call);
      return reply.status === 200 ? { ...reply, body: withSecret(reply.body) } : reply;
    },
    enableWebhookSubscription: async (call) => {
      const reply = await handlers.enableWebhookSubscription(call);
      return reply.status === 200 ? { ...reply, body: withSecret(reply.body) } : reply;
    },
    disableWebhookSubscription: async (call) => {
      const reply = await handlers.disableWebhookSubscription(call);
      return reply.status === 200 ? { ...reply, body: withSecret(reply.body) } : reply;
    },
  };
}

t.test("an answer that carries the secret where the document says never fails response validation", async (t) => {
  for (const table of ["real", "leaking"] as const) {
    t.test(`${table} handlers`, async (t) => {
      const server = await startTestServer(t, table === "leaking" ? { handlers: leaking() } : {});
      t.ok(server.services.config.validateResponses, "the test server validates every answer");
      const tenant = await createTestTenant(server.services);
      const created = await server.request("/v1/webhooks/subscriptions", {
        method: "POST",
        token: tenant.token,
        json: { url: "https://hooks.example.com/secret-once", events: ["*"] },
      });
      t.equal(created.status, 201, "create answers with the secret");
      const { id, secret } = (await created.json()) as { id: string; secret: string };
      t.match(secret, /^whsec_/);
      const item = `/v1/webhooks/subscriptions/${id}`;
      const calls: [string, string, string, unknown?][] = [
        ["listWebhookSubscriptions", "GET", "/v1/webhooks/subscriptions"],
        ["getWebhookSubscription", "GET", item],
        ["updateWebhookSubscription", "PATCH", item, { description: "Claims" }],
        ["disableWebhookSubscription", "POST", `${item}/disable`],
        ["enableWebhookSubscription", "POST", `${item}/enable`],
      ];
      for (const [operation, method, url, json] of calls) {
        const res = await server.request(url, { method, token: tenant.token, ...(json ? { json } : {}) });
        const text = await res.text();
        if (table === "real") {
          t.equal(res.status, 200, `${operation} answers`);
          t.notMatch(text, /"secret"/, `${operation} shows no secret`);
        } else {
          t.equal(res.status, 500, `${operation} with a secret fails the document`);
          t.equal((JSON.parse(text) as { error: { code: string } }).error.code, "INTERNAL_ERROR");
          t.notMatch(text, LEAKED, `${operation}: the secret does not reach the client`);
        }
      }
      const rotated = await server.request(`${item}/rotate-secret`, { method: "POST", token: tenant.token });
      t.equal(rotated.status, 200, "rotate-secret answers with the new secret");
      t.match(((await rotated.json()) as { secret: string }).secret, /^whsec_/);
      if (table === "leaking") {
        t.equal(server.errors.length, calls.length, "each leaking answer is recorded as an error");
        for (const error of server.errors) t.match(String(error), /additional propert/i, "for its extra property");
      } else t.same(server.errors, []);
    });
  }
});

t.test("WebhookSubscription is WebhookSubscriptionResponse without its secret", async (t) => {
  const document = JSON.parse(fs.readFileSync(path.join(ROOT, "generated/openapi.json"), "utf8"));
  const { WebhookSubscription: shown, WebhookSubscriptionResponse: withRoom } = document.components.schemas;
  t.equal(shown.additionalProperties, false, "closed: no secret can be present");
  t.notOk("secret" in shown.properties);
  const { secret, ...fields } = withRoom.properties;
  t.ok(secret, "the create and rotate-secret answers' schema has the secret");
  t.same(shown.properties, fields, "the same fields, each with the same schema");
  t.same(shown.required, withRoom.required, "and the same required fields");
  const secretless = JSON.stringify(document).match(/"secret":false/g);
  t.equal(secretless, null, "no boolean schema says it anywhere");
});
