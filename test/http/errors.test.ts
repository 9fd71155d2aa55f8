// The error contract: envelope with request_id, X-Request-Id on every response, FastAPI-shaped 422
// with pydantic type names, and 404/405/413/415/500/501 mapped. Never a stack trace.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import type { HandlerTable } from "../../http/operations.ts";
import { handlers } from "../../handlers/index.ts";

interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

const validItem = { filename: "a.pdf", file_size: 10, mime_type: "application/pdf" };

t.test("error statuses and bodies", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);

  t.test("X-Request-Id is echoed when safe and generated otherwise, on every response", async (t) => {
    const echoed = await server.request("/v1/health", { headers: { "X-Request-Id": "abc-123" } });
    t.equal(echoed.headers.get("x-request-id"), "abc-123");
    const replaced = await server.request("/nope", { headers: { "X-Request-Id": "bad id with spaces" } });
    t.not(replaced.headers.get("x-request-id"), "bad id with spaces");
    t.match(replaced.headers.get("x-request-id"), /^[0-9a-f-]{36}$/);
    t.equal((await replaced.json()).request_id, replaced.headers.get("x-request-id"));
    const tooLong = await server.request("/v1/health", { headers: { "X-Request-Id": "x".repeat(129) } });
    t.not(tooLong.headers.get("x-request-id"), "x".repeat(129));
  });

  t.test("an unknown route is 404 NOT_FOUND", async (t) => {
    const res = await server.request("/v1/nothing-here");
    t.equal(res.status, 404);
    const body = await res.json();
    t.equal(body.error.code, "NOT_FOUND");
    t.type(body.request_id, "string");
  });

  t.test("a method the route does not have is 405 METHOD_NOT_ALLOWED with Allow", async (t) => {
    const res = await server.request("/v1/health", { method: "DELETE" });
    t.equal(res.status, 405);
    t.equal((await res.json()).error.code, "METHOD_NOT_ALLOWED");
    t.match(res.headers.get("allow") ?? "", /GET/);
  });

  t.test("a body over 1 MiB is 413 PAYLOAD_TOO_LARGE", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: { ...validItem, item_metadata: { blob: "x".repeat(1024 * 1024 + 10) } },
    });
    t.equal(res.status, 413);
    t.equal((await res.json()).error.code, "PAYLOAD_TOO_LARGE");
  });

  t.test("a body that is not JSON is 415 UNSUPPORTED_MEDIA_TYPE", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      body: "filename=a",
      headers: { "Content-Type": "text/plain" },
    });
    t.equal(res.status, 415);
    t.equal((await res.json()).error.code, "UNSUPPORTED_MEDIA_TYPE");
  });

  t.test("malformed JSON is 422 json_invalid", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      body: '{"filename": ',
      headers: { "Content-Type": "application/json" },
    });
    t.equal(res.status, 422);
    const body = (await res.json()) as { detail: Issue[] };
    t.equal(body.detail[0]?.type, "json_invalid");
    t.equal(body.detail[0]?.loc[0], "body");
  });

  t.test("authentication is checked before the body: no token and a bad body is 401", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      body: "{",
      headers: { "Content-Type": "application/json" },
    });
    t.equal(res.status, 401);
  });

  const cases: {
    rule: string;
    path: string;
    method?: string;
    json?: unknown;
    loc: (string | number)[];
    type: string;
    ctx?: Record<string, unknown>;
    input?: unknown;
  }[] = [
    {
      rule: "a missing field is missing",
      path: "/v1/intake/submit",
      json: { file_size: 1, mime_type: "application/pdf" },
      loc: ["body", "filename"],
      type: "missing",
    },
    {
      rule: "a number where a string is declared is string_type",
      path: "/v1/intake/submit",
      json: { ...validItem, filename: 12 },
      loc: ["body", "filename"],
      type: "string_type",
      input: 12,
    },
    {
      rule: "a string where an integer is declared is int_type (no coercion)",
      path: "/v1/intake/submit",
      json: { ...validItem, file_size: "10" },
      loc: ["body", "file_size"],
      type: "int_type",
      input: "10",
    },
    {
      rule: "a fraction where an integer is declared is int_type",
      path: "/v1/intake/submit",
      json: { ...validItem, file_size: 1.5 },
      loc: ["body", "file_size"],
      type: "int_type",
    },
    {
      rule: "an empty filename is string_too_short",
      path: "/v1/intake/submit",
      json: { ...validItem, filename: "" },
      loc: ["body", "filename"],
      type: "string_too_short",
      ctx: { min_length: 1 },
    },
    {
      rule: "a filename over 255 is string_too_long",
      path: "/v1/intake/submit",
      json: { ...validItem, filename: "a".repeat(256) },
      loc: ["body", "filename"],
      type: "string_too_long",
      ctx: { max_length: 255 },
    },
    {
      rule: "file_size 0 is greater_than",
      path: "/v1/intake/submit",
      json: { ...validItem, file_size: 0 },
      loc: ["body", "file_size"],
      type: "greater_than",
      ctx: { gt: 0 },
    },
    {
      rule: "item_metadata that is not an object is dict_type",
      path: "/v1/intake/submit",
      json: { ...validItem, item_metadata: [1] },
      loc: ["body", "item_metadata"],
      type: "dict_type",
    },
    {
      rule: "a body that is not an object is dict_type",
      path: "/v1/intake/submit",
      json: [validItem],
      loc: ["body"],
      type: "dict_type",
    },
    {
      rule: "items that is not an array is list_type",
      path: "/v1/intake/batch",
      json: { items: "x" },
      loc: ["body", "items"],
      type: "list_type",
    },
    {
      rule: "an empty items list is too_short",
      path: "/v1/intake/batch",
      json: { items: [] },
      loc: ["body", "items"],
      type: "too_short",
      ctx: { min_length: 1 },
    },
    {
      rule: "101 items is too_long",
      path: "/v1/intake/batch",
      json: { items: Array.from({ length: 101 }, () => validItem) },
      loc: ["body", "items"],
      type: "too_long",
      ctx: { max_length: 100 },
    },
    {
      rule: "errors inside batch items carry the item index",
      path: "/v1/intake/batch",
      json: { items: [validItem, { ...validItem, mime_type: "" }] },
      loc: ["body", "items", 1, "mime_type"],
      type: "string_too_short",
    },
    {
      rule: "a tenant_id that is not a UUID is uuid_parsing",
      path: "/v1/intake/submit?tenant_id=abc",
      json: validItem,
      loc: ["query", "tenant_id"],
      type: "uuid_parsing",
    },
    {
      rule: "limit 0 is greater_than_equal",
      path: "/v1/webhooks/deliveries?limit=0",
      method: "GET",
      loc: ["query", "limit"],
      type: "greater_than_equal",
      ctx: { ge: 1 },
    },
    {
      rule: "limit 201 is less_than_equal",
      path: "/v1/webhooks/deliveries?limit=201",
      method: "GET",
      loc: ["query", "limit"],
      type: "less_than_equal",
      ctx: { le: 200 },
    },
    {
      rule: "a limit that is not a number is int_parsing (parameters are text)",
      path: "/v1/webhooks/deliveries?limit=ten",
      method: "GET",
      loc: ["query", "limit"],
      type: "int_parsing",
    },
    {
      rule: "an unknown event kind is enum",
      path: "/v1/webhooks/subscriptions",
      json: { url: "https://hooks.example.com/a", events: ["nope"] },
      loc: ["body", "events", 0],
      type: "enum",
    },
  ];
  for (const testCase of cases) {
    t.test(`422: ${testCase.rule}`, async (t) => {
      const res = await server.request(testCase.path, {
        method: testCase.method ?? "POST",
        token: tenant.token,
        ...(testCase.json === undefined ? {} : { json: testCase.json }),
      });
      t.equal(res.status, 422);
      const body = (await res.json()) as { detail: Issue[] };
      const issue = body.detail.find((entry) => JSON.stringify(entry.loc) === JSON.stringify(testCase.loc));
      t.ok(issue, `an issue at ${JSON.stringify(testCase.loc)} in ${JSON.stringify(body.detail)}`);
      t.equal(issue?.type, testCase.type);
      t.type(issue?.msg, "string");
      if (testCase.ctx) t.match(issue?.ctx, testCase.ctx);
      if ("input" in testCase) t.same(issue?.input, testCase.input);
    });
  }

  t.test("every violation is listed, not just the first", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: { filename: "", file_size: -1, mime_type: 5, module: "m".repeat(41) },
    });
    t.equal(res.status, 422);
    const types = ((await res.json()) as { detail: Issue[] }).detail
      .map((issue) => `${issue.loc.join(".")}:${issue.type}`)
      .sort();
    t.same(types, [
      "body.file_size:greater_than",
      "body.filename:string_too_short",
      "body.mime_type:string_type",
      "body.module:string_too_long",
    ]);
  });

  t.test("an unknown body field is listed beside the other violations, as extra_forbidden", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: { ...validItem, filename: "", surprise: true },
    });
    const detail = ((await res.json()) as { detail: Issue[] }).detail;
    t.same(detail.map((issue) => `${issue.loc.join(".")} ${issue.type}`).sort(), [
      "body.filename string_too_short",
      "body.surprise extra_forbidden",
    ]);
  });

  t.test("an empty Idempotency-Key is 422 IDEMPOTENCY_KEY_INVALID in the envelope", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: validItem,
      headers: { "Idempotency-Key": "" },
    });
    t.equal(res.status, 422);
    const body = await res.json();
    t.equal(body.error.code, "IDEMPOTENCY_KEY_INVALID");
    t.type(body.request_id, "string");
  });

  t.test("an Idempotency-Key of 129 characters is 422 IDEMPOTENCY_KEY_INVALID", async (t) => {
    const res = await server.request("/v1/intake/submit", {
      method: "POST",
      token: tenant.token,
      json: validItem,
      headers: { "Idempotency-Key": "k".repeat(129) },
    });
    t.equal(res.status, 422);
    t.equal((await res.json()).error.code, "IDEMPOTENCY_KEY_INVALID");
  });
});

t.test("unexpected failures are 500 INTERNAL_ERROR without a stack trace", async (t) => {
  const failing: HandlerTable = {
    ...handlers,
    getHealth: async () => {
      throw new Error("database password is hunter2");
    },
  };
  const server = await startTestServer(t, { handlers: failing });
  const res = await server.request("/v1/health");
  t.equal(res.status, 500);
  const text = await res.text();
  t.notMatch(text, /hunter2|at .*\.ts|Error:/);
  t.equal(JSON.parse(text).error.code, "INTERNAL_ERROR");
  t.equal(server.errors.length, 1, "the error is logged on the server side");
});

t.test("a response that breaks the contract fails (response validation in tests)", async (t) => {
  const broken: HandlerTable = {
    ...handlers,
    getHealth: async () => ({ status: 200, body: { status: "fine" } as never }),
  };
  const server = await startTestServer(t, { handlers: broken });
  const res = await server.request("/v1/health");
  t.equal(res.status, 500);
  t.equal((await res.json()).error.code, "INTERNAL_ERROR");
});

t.test("an operation without a handler answers 501 NOT_IMPLEMENTED in the envelope", async (t) => {
  const server = await startTestServer(t, { handlers: {} });
  const tenant = await createTestTenant(server.services);
  const res = await server.request("/v1/webhooks/subscriptions", { token: tenant.token });
  t.equal(res.status, 501);
  const body = await res.json();
  t.equal(body.error.code, "NOT_IMPLEMENTED");
  t.type(body.request_id, "string");
});
