// One subscription per URL, whatever its spelling: a subscription's URL is stored and answered in its
// canonical form (canonicalWebhookUrl in foundation/url-safety.ts), so another spelling of an existing URL is
// 409 WEBHOOK_SUBSCRIPTION_DUPLICATE_URL; a fragment, never sent to an endpoint, is refused with 422.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

t.test("spellings of one URL are one subscription; a fragment is refused", async (t) => {
  const server = await startTestServer(t, { env: { WEBHOOK_ALLOWED_PORTS: "443,18843" } });
  const tenant = await createTestTenant(server.services);
  const subscribe = (url: string) =>
    server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: tenant.token,
      json: { url, events: ["*"] },
    });

  const first = await subscribe("https://Hooks.Example.com:0443/./in/%62ox?");
  t.equal(first.status, 201);
  const created = (await first.json()) as { id: string; url: string };
  t.equal(created.url, "https://hooks.example.com/in/box", "stored and answered in its canonical form");
  const listed = await server.request(`/v1/webhooks/subscriptions/${created.id}`, { token: tenant.token });
  t.equal(((await listed.json()) as { url: string }).url, "https://hooks.example.com/in/box");

  for (const spelling of [
    "https://hooks.example.com/in/box",
    "https://hooks.example.com/in/box?",
    "https://HOOKS.EXAMPLE.COM/in/box",
    "https://hooks.example.com./in/box",
    "https://hooks.example.com/./in/box",
    "https://hooks.example.com/in/x/../box",
    "https://hooks.example.com/%69n/box",
    "https://hooks.example.com:443/in/box",
  ]) {
    const res = await subscribe(spelling);
    t.equal(res.status, 409, spelling);
    const body = (await res.json()) as { error: { code: string; details: { subscription_id: string } } };
    t.equal(body.error.code, "WEBHOOK_SUBSCRIPTION_DUPLICATE_URL", spelling);
    t.equal(body.error.details.subscription_id, created.id, spelling);
  }

  const ported = await subscribe("https://hooks.example.com:018843/in/box");
  t.equal(ported.status, 201, "another port is another URL");
  t.equal(((await ported.json()) as { url: string }).url, "https://hooks.example.com:18843/in/box");
  t.equal((await subscribe("https://hooks.example.com:18843/in/box")).status, 409, "leading zeros of a port");

  for (const withFragment of ["https://hooks.example.com/other#f", "https://hooks.example.com/other#"]) {
    const res = await subscribe(withFragment);
    t.equal(res.status, 422, withFragment);
    const body = (await res.json()) as { detail: { loc: string[]; type: string; msg: string }[] };
    t.same(body.detail[0]?.loc, ["body", "url"]);
    t.equal(body.detail[0]?.type, "value_error");
    t.match(body.detail[0]?.msg, /fragment/);
  }
  t.equal((await subscribe("https://hooks.example.com/in/box%2F")).status, 201, "an escaped slash is another path");
});
