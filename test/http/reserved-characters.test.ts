// Query values as people type them: a date-time filter's colons and an external reference's `:` and `/`
// may be sent as they are (the document's allowReserved), as curl and a browser's address bar send them,
// and mean what their percent-encoded form means. A `+` reads as a space in a query string, so an offset's
// `+` unencoded is a date-time that is none (422 at its loc) and `%2B` is the offset.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

const server = await startTestServer(t);
const who = await createTestTenant(server.services);

async function get(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await server.request(path, { token: who.token });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const ids = (body: Record<string, unknown>, list: string) => (body[list] as { id: string }[]).map((entry) => entry.id);

async function submit(externalReference: string): Promise<string> {
  const res = await server.request("/v1/intake/submit", {
    method: "POST",
    token: who.token,
    json: {
      filename: "contract.pdf",
      file_size: 48213,
      mime_type: "application/pdf",
      external_reference: externalReference,
    },
  });
  if (res.status !== 201) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

const before = new Date(Date.now() - 60_000).toISOString();
let reference = "";
let other = "";
t.before(async () => {
  reference = await submit("urn:claim/4711");
  other = await submit("claim-4712");
});

t.test("a date-time filter's colons as they are mean what %3A means, in every list", async (t) => {
  for (const [path, list] of [
    ["/v1/intake/submissions", "submissions"],
    ["/v1/webhooks/deliveries", "deliveries"],
    ["/v1/events", "events"],
  ] as const) {
    for (const name of ["created_after", "created_before"]) {
      const raw = await get(`${path}?${name}=${before}`);
      const encoded = await get(`${path}?${name}=${encodeURIComponent(before)}`);
      t.equal(raw.status, 200, `${path}?${name}= with raw colons: 200 (${JSON.stringify(raw.body).slice(0, 200)})`);
      t.same(ids(raw.body, list), ids(encoded.body, list), `${path}?${name}: as percent-encoded`);
    }
  }
  const after = await get(`/v1/intake/submissions?created_after=${before}`);
  t.same(ids(after.body, "submissions").sort(), [reference, other].sort(), "both submissions are after it");
  const none = await get(`/v1/intake/submissions?created_before=${before}`);
  t.same(ids(none.body, "submissions"), [], "and none before it");
});

t.test("an external reference's `:` and `/` as they are find it", async (t) => {
  const raw = await get("/v1/intake/submissions?external_reference=urn:claim/4711");
  t.equal(raw.status, 200);
  t.same(ids(raw.body, "submissions"), [reference]);
});

t.test("an offset's + unencoded reads as a space: 422 at its loc; %2B is the offset", async (t) => {
  const spaced = await get("/v1/intake/submissions?created_after=2026-01-01T00:00:00+01:00");
  t.equal(spaced.status, 422);
  t.match(spaced.body, { detail: [{ loc: ["query", "created_after"], type: "value_error" }] });
  const offset = await get("/v1/intake/submissions?created_after=2026-01-01T00:00:00%2B01:00");
  t.equal(offset.status, 200);
  t.same(ids(offset.body, "submissions").sort(), [reference, other].sort());
});
