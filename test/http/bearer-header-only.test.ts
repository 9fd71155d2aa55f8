// A bearer token is read from the Authorization header only (RFC 6750 §2.1). One in the `access_token`
// query parameter (which ends up in proxy and access logs) or in a body field is not a credential: the
// request is answered 401 exactly as one without a token, portal credentials included.
import t from "tap";
import { createTestTenant, startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let userToken: string;
let portalToken: string;

t.before(async () => {
  server = await startTestServer(t, { env: { PUBLIC_BASE_URL: "https://integrator.example.com" } });
  const tenant = await createTestTenant(server.services);
  userToken = tenant.token;
  const link = await server.request("/v1/webhooks/portal-sessions", { method: "POST", token: tenant.token });
  const { url } = (await link.json()) as { url: string };
  portalToken = new URL(url).hash.replace(/^#token=/, "");
});

interface Answer {
  status: number;
  challenge: string | null;
  error: unknown;
}

async function answerOf(res: Response): Promise<Answer> {
  const body = (await res.json()) as { error?: unknown };
  return { status: res.status, challenge: res.headers.get("www-authenticate"), error: body.error };
}

/** The answer to the same request without any token: the reference every smuggled token must equal. */
const WITHOUT_TOKEN = {
  status: 401,
  challenge: 'Bearer realm="integrator-api"',
  error: { code: "UNAUTHORIZED", message: "A bearer token is required" },
};

t.test("the reference: the header works for both credentials, nothing is 401 without a token", async (t) => {
  t.equal((await server.request("/v1/webhooks/deliveries", { token: userToken })).status, 200);
  t.equal((await server.request("/v1/webhooks/deliveries", { token: portalToken })).status, 200);
  t.same(await answerOf(await server.request("/v1/webhooks/deliveries")), WITHOUT_TOKEN);
});

for (const [name, credential] of [
  ["an access token", () => userToken],
  ["a portal credential", () => portalToken],
] as const) {
  t.test(`${name} in ?access_token= is answered as no token`, async (t) => {
    const res = await server.request(`/v1/webhooks/deliveries?access_token=${encodeURIComponent(credential())}`);
    t.same(await answerOf(res), WITHOUT_TOKEN);
  });

  t.test(`${name} in a JSON body field is answered as no token`, async (t) => {
    const res = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      json: { access_token: credential(), url: "https://hooks.example.com/a", events: ["*"] },
    });
    t.same(await answerOf(res), WITHOUT_TOKEN);
  });

  t.test(`${name} in a form body field is answered as no token`, async (t) => {
    const res = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      body: new URLSearchParams({ access_token: credential() }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    t.same(await answerOf(res), WITHOUT_TOKEN);
  });
}

t.test("a token in the header still works when a query parameter access_token is present too", async (t) => {
  const res = await server.request("/v1/webhooks/deliveries?access_token=whatever", { token: userToken });
  // Authenticated by the header; the undeclared query parameter is then refused like any other.
  t.equal(res.status, 422);
  const body = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
  t.same(body.detail[0]?.loc, ["query", "access_token"]);
  t.equal(body.detail[0]?.type, "extra_forbidden");
});
