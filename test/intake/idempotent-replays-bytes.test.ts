// An idempotent replay answers the very bytes of the first answer (the remembered body is stored as the
// text that was sent, not as jsonb, which reorders keys), for intake and for partner switch.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";

// Keys jsonb would reorder (it sorts by length, then bytes) and text it would re-render (escapes, spaces).
const metadata = { zebra: 1, a: { yy: "\u00e9", b: [1, 2.5, { dd: null, c: true }] }, "mid length": "x" };

t.test("idempotent replays are byte-identical", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);

  const twice = async (path: string, body: unknown, key: string) => {
    const send = () =>
      server.request(path, { method: "POST", token: tenant.token, json: body, headers: { "Idempotency-Key": key } });
    const first = await send();
    const firstText = await first.text();
    const replay = await send();
    const replayText = await replay.text();
    return { first, firstText, replay, replayText };
  };

  t.test("an intake submit replay returns the first answer's exact bytes", async (t) => {
    const { first, firstText, replay, replayText } = await twice(
      "/v1/intake/submit",
      { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf", item_metadata: metadata },
      "bytes-submit",
    );
    t.equal(first.status, 201);
    t.equal(replay.status, 201);
    t.equal(replay.headers.get("idempotent-replayed"), "true");
    t.equal(replay.headers.get("content-type"), first.headers.get("content-type"));
    t.equal(replayText, firstText);
  });

  t.test("a keyed first answer is the submission as read back, byte for byte (created_at included)", async (t) => {
    // The first keyed answer is written by the database statement that remembers it; it must be the
    // very text an unkeyed answer or a read would give for the same row.
    const { first, firstText } = await twice(
      "/v1/intake/batch",
      {
        items: [{ filename: "a.pdf", file_size: 1, mime_type: "application/pdf" }],
        external_reference: 'quote " and \u00e9 and \u2028',
        module: "m",
      },
      "bytes-read-back",
    );
    t.equal(first.status, 201);
    const { id } = JSON.parse(firstText) as { id: string };
    const read = await server.request(`/v1/intake/submissions/${id}`, { token: tenant.token });
    const { submission } = (await read.json()) as { submission: { created_at: string } };
    t.equal(firstText, JSON.stringify(submission));
    t.match(submission.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  t.test("an intake batch replay returns the first answer's exact bytes", async (t) => {
    const item = { filename: "a.pdf", file_size: 1, mime_type: "application/pdf", item_metadata: metadata };
    const { first, firstText, replay, replayText } = await twice(
      "/v1/intake/batch",
      { items: [item, { ...item, filename: "b.pdf" }], external_reference: "batch-1" },
      "bytes-batch",
    );
    t.equal(first.status, 201);
    t.equal(replay.headers.get("idempotent-replayed"), "true");
    t.equal(replayText, firstText);
  });

  t.test("a partner switch replay returns the first answer's exact bytes", async (t) => {
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const { first, firstText, replay, replayText } = await twice(
      "/v1/partner-switch",
      { target_partner_key: partner.partnerKey, context_values: { plan: "gold", employee_id: "e-1" } },
      "bytes-switch",
    );
    t.equal(first.status, 200);
    t.equal(replay.headers.get("idempotent-replayed"), "true");
    t.equal(replay.headers.get("x-correlation-id"), first.headers.get("x-correlation-id"));
    t.equal(replayText, firstText);
  });
});
