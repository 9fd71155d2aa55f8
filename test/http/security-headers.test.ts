// Every response carries the headers an API conventionally sends (nosniff, no framing, no referrer,
// no caching unless the operation allows it), errors and refusals included.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

const EXPECTED = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
};

t.test("every response carries nosniff, no framing, no referrer and a restrictive CSP", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const responses: [string, Response][] = [
    ["health", await server.request("/v1/health")],
    ["jwks", await server.request("/.well-known/jwks.json")],
    ["unknown route", await server.request("/v1/nothing-here")],
    ["401", await server.request("/v1/webhooks/subscriptions")],
    ["200 protected", await server.request("/v1/webhooks/subscriptions", { token: tenant.token })],
    ["422", await server.request("/v1/intake/submit", { method: "POST", token: tenant.token, json: {} })],
    [
      "token 400",
      await server.request("/token", {
        method: "POST",
        body: "grant_type=nope",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      }),
    ],
  ];
  for (const [what, res] of responses) {
    for (const [name, value] of Object.entries(EXPECTED)) t.equal(res.headers.get(name), value, `${what}: ${name}`);
    await res.arrayBuffer();
  }
});

t.test("responses are not cacheable unless the operation says so (the JWKS may be cached)", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const listed = await server.request("/v1/webhooks/subscriptions", { token: tenant.token });
  t.equal(listed.headers.get("cache-control"), "no-store");
  const missing = await server.request("/v1/nothing-here");
  t.equal(missing.headers.get("cache-control"), "no-store");
  const jwks = await server.request("/.well-known/jwks.json");
  t.equal(jwks.headers.get("cache-control"), "public, max-age=300");
});

t.test("answers carry no ETag and a conditional GET is answered in full (the contract declares neither)", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const created = await server.request("/v1/intake/submit", {
    method: "POST",
    token: tenant.token,
    json: { filename: "a.pdf", file_size: 1, mime_type: "application/pdf" },
  });
  t.equal(created.headers.get("etag"), null, "not on a 201");
  const { id } = (await created.json()) as { id: string };
  const read = await server.request(`/v1/intake/submissions/${id}`, { token: tenant.token });
  t.equal(read.headers.get("etag"), null, "not on a 200");
  await read.arrayBuffer();
  const conditional = await server.request(`/v1/intake/submissions/${id}`, {
    token: tenant.token,
    headers: { "If-None-Match": "*" },
  });
  t.equal(conditional.status, 200, "If-None-Match changes nothing");
  t.ok((await conditional.text()).includes(id));
});
