// A number JSON.parse overflows to ±Infinity (1e400) is refused before any handler runs: 422 finite_number
// on token-protected operations, 400 CALLBACK_PAYLOAD_INVALID on partner callbacks; never a 500, and
// nothing at error level in the log.
import { Writable } from "node:stream";
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";

function logCollector() {
  const lines: { level: string; msg?: string }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n"))
        if (line.trim()) lines.push(JSON.parse(line) as { level: string; msg?: string });
      done();
    },
  });
  return { lines, destination };
}

t.test("non-finite numbers", async (t) => {
  const log = logCollector();
  const server = await startTestServer(t, { logDestination: log.destination });
  const tenant = await createTestTenant(server.services);
  const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
  const post = (path: string, body: string, token?: string) =>
    server.request(path, {
      method: "POST",
      body,
      headers: { "Content-Type": "application/json", "Idempotency-Key": `k-${Math.random()}` },
      ...(token ? { token } : {}),
    });

  t.test("1e400 in item_metadata is 422 finite_number at its path and nothing is stored", async (t) => {
    const res = await post(
      "/v1/intake/submit",
      '{"filename":"a.pdf","file_size":1,"mime_type":"application/pdf","item_metadata":{"amount":1e400,"n":[-1e999]}}',
      tenant.token,
    );
    t.equal(res.status, 422);
    const { detail } = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    t.same(
      detail.map((issue) => [issue.loc, issue.type]),
      [
        [["body", "item_metadata", "amount"], "finite_number"],
        [["body", "item_metadata", "n", 0], "finite_number"],
      ],
    );
    const { count } = (await server.services.db("integrator.intake_submissions").count("* as count").first()) as {
      count: number;
    };
    t.equal(count, 0);
  });

  t.test("1e400 in a batch item's metadata is 422 finite_number", async (t) => {
    const res = await post(
      "/v1/intake/batch",
      '{"items":[{"filename":"a.pdf","file_size":1,"mime_type":"application/pdf","item_metadata":{"x":1e400}}]}',
      tenant.token,
    );
    t.equal(res.status, 422);
    const { detail } = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    t.same(detail[0]?.loc, ["body", "items", 0, "item_metadata", "x"]);
    t.equal(detail[0]?.type, "finite_number");
  });

  t.test("1e400 in a partner switch body is 422, not a 500", async (t) => {
    const res = await post(
      "/v1/partner-switch",
      `{"target_partner_key":"${partner.partnerKey}","extra":1e400}`,
      tenant.token,
    );
    t.equal(res.status, 422);
    const { detail } = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    t.same(detail[0]?.loc, ["body", "extra"]);
  });

  t.test("1e400 in a partner callback is 400 CALLBACK_PAYLOAD_INVALID without credentials", async (t) => {
    const res = await post(
      `/v1/callbacks/partner/${partner.partnerKey}`,
      `{"tenant_id":"${tenant.tenantId}","payload":{"event":"x","amount":1e400},"signature":"00"}`,
    );
    t.equal(res.status, 400);
    const body = (await res.json()) as { error: { code: string } };
    t.equal(body.error.code, "CALLBACK_PAYLOAD_INVALID");
  });

  t.test("none of them wrote an error-level line or reached the unexpected-error report", async (t) => {
    t.same(
      log.lines.filter((line) => line.level === "error" || line.level === "fatal"),
      [],
    );
    t.equal(server.errors.length, 0);
  });
});
