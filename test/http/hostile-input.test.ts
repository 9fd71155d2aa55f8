// Hostile input gets a documented error, changes nothing, and never produces a 500.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

const pdf = { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf" };

t.test("hostile bodies", async (t) => {
  const server = await startTestServer(t);
  t.afterEach(() => {
    server.errors.length = 0;
  });
  const tenant = await createTestTenant(server.services);
  const raw = (path: string, body: string, headers: Record<string, string> = {}) =>
    server.request(path, {
      method: "POST",
      token: tenant.token,
      body,
      headers: { "Content-Type": "application/json", ...headers },
    });

  t.test("deeply nested item_metadata is a 422, not a stack overflow", async (t) => {
    const depth = 100_000;
    const nested = `${"[".repeat(depth)}${"]".repeat(depth)}`;
    const res = await raw(
      "/v1/intake/submit",
      `{"filename":"a.pdf","file_size":1,"mime_type":"application/pdf","item_metadata":{"x":${nested}}}`,
      { "Idempotency-Key": "deep" },
    );
    t.ok([413, 422].includes(res.status), `answered ${res.status}`);
    t.equal(server.errors.length, 0, "no unexpected error was logged");
  });

  t.test("a deeply nested body where an object is expected is a 422", async (t) => {
    const depth = 200_000;
    const res = await raw("/v1/intake/batch", `{"items":${"[".repeat(depth)}${"]".repeat(depth)}}`);
    t.ok([413, 422].includes(res.status), `answered ${res.status}`);
    t.equal(server.errors.length, 0, JSON.stringify(server.errors.map(String)));
  });

  t.test("prototype-pollution keys are plain data", async (t) => {
    const res = await raw(
      "/v1/intake/submit",
      JSON.stringify({
        ...pdf,
        item_metadata: JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}'),
      }),
    );
    t.equal(res.status, 201);
    t.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  t.test("NUL characters and unpaired surrogates are 422 value_error at their path", async (t) => {
    for (const filename of ["a\u0000b.pdf", "\ud800.pdf", "\udc00x"]) {
      const res = await raw("/v1/intake/submit", JSON.stringify({ ...pdf, filename }));
      t.equal(res.status, 422, `${JSON.stringify(filename)} answered ${res.status}`);
      const [issue] = (await res.json()).detail;
      t.same(issue.loc, ["body", "filename"]);
      t.equal(issue.type, "value_error");
    }
    const inMetadata = await raw(
      "/v1/intake/batch",
      JSON.stringify({ items: [{ ...pdf, item_metadata: { ["k\u0000"]: 1, note: ["ok", "a\u0000b"] } }] }),
    );
    t.equal(inMetadata.status, 422);
    const locs = (await inMetadata.json()).detail.map((issue: { loc: unknown[] }) => JSON.stringify(issue.loc)).sort();
    t.same(locs, [
      JSON.stringify(["body", "items", 0, "item_metadata", "k\u0000"]),
      JSON.stringify(["body", "items", 0, "item_metadata", "note", 1]),
    ]);
    t.equal(
      (await raw("/v1/intake/submit", JSON.stringify({ ...pdf, filename: "emoji-\ud83d\ude00.pdf" }))).status,
      201,
      "a paired surrogate (emoji) is fine",
    );
    t.equal(server.errors.length, 0, JSON.stringify(server.errors.map(String)));
  });

  t.test("huge numbers and non-integers are validation errors", async (t) => {
    for (const file_size of [1e308, 2 ** 53, -1, 0.5]) {
      const res = await raw("/v1/intake/submit", JSON.stringify({ ...pdf, file_size }));
      t.equal(res.status, 422, `${file_size} answered ${res.status}`);
    }
    const overflow = await raw(
      "/v1/intake/submit",
      `{"filename":"a.pdf","file_size":1e400,"mime_type":"application/pdf"}`,
    );
    t.equal(overflow.status, 422, `1e400 (Infinity) answered ${overflow.status}`);
    t.equal(server.errors.length, 0, JSON.stringify(server.errors.map(String)));
  });

  t.test("a path parameter with odd characters is a 404", async (t) => {
    for (const id of ["%00", "..%2F..%2Fetc", "a".repeat(64), "%E2%80%AE"]) {
      const res = await server.request(`/v1/intake/submissions/${id}`, { token: tenant.token });
      t.ok([404, 422].includes(res.status), `${id} answered ${res.status}`);
    }
    t.equal(server.errors.length, 0, JSON.stringify(server.errors.map(String)));
  });
});
