// Numbers a JavaScript number cannot hold as sent are refused wherever they sit in a JSON body, before any
// handler runs; never a 500, and nothing at error level in the log. A number JSON.parse overflows to
// ±Infinity (1e400) is 422 finite_number on token-protected operations, 400 CALLBACK_PAYLOAD_INVALID on
// partner callbacks. An integer literal beyond ±(2^53−1) (RFC 7493 I-JSON) is 422 value_error at its path;
// it used to be rounded silently (9007199254740993 stored as 9007199254740992) in item_metadata.
import { Writable } from "node:stream";
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";

interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
}

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

t.test("numbers a JavaScript number cannot hold", async (t) => {
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
  const submissions = async () =>
    Number(
      ((await server.services.db("integrator.intake_submissions").count("* as count").first()) as { count: string })
        .count,
    );
  const item = (metadata: string) =>
    `{"filename":"a.pdf","file_size":1,"mime_type":"application/pdf","item_metadata":${metadata}}`;

  t.test("1e400 in item_metadata is 422 finite_number at its path and nothing is stored", async (t) => {
    const res = await post("/v1/intake/submit", item('{"amount":1e400,"n":[-1e999]}'), tenant.token);
    t.equal(res.status, 422);
    const { detail } = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    t.same(
      detail.map((issue) => [issue.loc, issue.type]),
      [
        [["body", "item_metadata", "amount"], "finite_number"],
        [["body", "item_metadata", "n", 0], "finite_number"],
      ],
    );
    t.equal(await submissions(), 0);
  });

  t.test("1e400 in a batch item's metadata is 422 finite_number", async (t) => {
    const res = await post("/v1/intake/batch", `{"items":[${item('{"x":1e400}')}]}`, tenant.token);
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

  t.test("integers beyond 2^53", async (t) => {
    t.test("in item_metadata: 422 value_error at its path, nothing stored", async (t) => {
      const before = await submissions();
      const res = await post(
        "/v1/intake/submit",
        item('{"claim":9007199254740993,"ids":[1,-12345678901234567890],"ok":9007199254740991}'),
        tenant.token,
      );
      t.equal(res.status, 422);
      const { detail } = (await res.json()) as { detail: Issue[] };
      t.same(
        detail.map((issue) => [issue.loc, issue.type]),
        [
          [["body", "item_metadata", "claim"], "value_error"],
          [["body", "item_metadata", "ids", 1], "value_error"],
        ],
      );
      t.match(detail[0]?.msg, /2\^53/);
      t.equal(await submissions(), before);
    });

    t.test("in a batch item's metadata: at that item's path", async (t) => {
      const res = await post(
        "/v1/intake/batch",
        `{"items":[${item("{}")},${item('{"n":{"deep":18446744073709551616}}')}]}`,
        tenant.token,
      );
      t.equal(res.status, 422);
      const { detail } = (await res.json()) as { detail: Issue[] };
      t.same(
        detail.map((issue) => issue.loc),
        [["body", "items", 1, "item_metadata", "n", "deep"]],
      );
    });

    t.test("the largest exact integers, long digit strings and fractions are kept as sent", async (t) => {
      const metadata = '{"max":9007199254740991,"min":-9007199254740991,"text":"12345678901234567890","f":1.5e300}';
      const res = await post("/v1/intake/submit", item(metadata), tenant.token);
      t.equal(res.status, 201);
      const { id } = (await res.json()) as { id: string };
      const detail = await server.request(`/v1/intake/submissions/${id}`, { token: tenant.token });
      const { items } = (await detail.json()) as { items: { item_metadata: unknown }[] };
      t.same(items[0]?.item_metadata, JSON.parse(metadata));
    });

    t.test("in a field the document does not declare, the field itself is refused", async (t) => {
      const res = await post(
        "/v1/intake/submit",
        '{"filename":"a.pdf","file_size":1,"mime_type":"application/pdf","extra":-9007199254740993}',
        tenant.token,
      );
      t.equal(res.status, 422);
      const { detail } = (await res.json()) as { detail: Issue[] };
      t.match(detail, [{ loc: ["body", "extra"], type: "extra_forbidden" }]);
    });
  });

  t.test("none of them wrote an error-level line or reached the unexpected-error report", async (t) => {
    t.same(
      log.lines.filter((line) => line.level === "error" || line.level === "fatal"),
      [],
    );
    t.equal(server.errors.length, 0);
  });
});
