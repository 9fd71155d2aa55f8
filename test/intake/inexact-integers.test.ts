// An integer literal JavaScript cannot hold exactly (beyond ±(2^53−1), RFC 7493 I-JSON) is refused
// wherever it sits in a JSON body, before any handler runs: 422 value_error at its path. It used to be
// rounded silently (9007199254740993 stored as 9007199254740992) in item_metadata.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
}

t.test("integers beyond 2^53 in a body", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const post = (path: string, body: string) =>
    server.request(path, {
      method: "POST",
      body,
      token: tenant.token,
      headers: { "Content-Type": "application/json" },
    });
  const submissions = async () =>
    Number(
      ((await server.services.db("integrator.intake_submissions").count("* as count").first()) as { count: string })
        .count,
    );
  const item = (metadata: string) =>
    `{"filename":"a.pdf","file_size":1,"mime_type":"application/pdf","item_metadata":${metadata}}`;

  t.test("in item_metadata: 422 value_error at its path, nothing stored", async (t) => {
    const before = await submissions();
    const res = await post(
      "/v1/intake/submit",
      item('{"claim":9007199254740993,"ids":[1,-12345678901234567890],"ok":9007199254740991}'),
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
    const res = await post("/v1/intake/submit", item(metadata));
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
    );
    t.equal(res.status, 422);
    const { detail } = (await res.json()) as { detail: Issue[] };
    t.match(detail, [{ loc: ["body", "extra"], type: "extra_forbidden" }]);
  });
});
