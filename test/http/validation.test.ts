// The mapping from validator errors to pydantic-style issues, for rules no request schema exercises yet.
import t from "tap";
import type { Request } from "express";
import { locFromPath, toValidationIssues } from "../../http/validation.ts";

const request = (body: unknown) => ({ body, query: {}, params: {}, headers: {} }) as unknown as Request;

t.test("a non-boolean where a boolean is declared is bool_type", async (t) => {
  const [issue] = toValidationIssues(
    [{ path: "/body/flag", message: "must be boolean", errorCode: "type.openapi.validation" }],
    request({ flag: "yes" }),
  );
  t.same(issue, { loc: ["body", "flag"], msg: "Input should be a valid boolean", type: "bool_type", input: "yes" });
});

t.test("a missing field reports the enclosing object as input", async (t) => {
  const [issue] = toValidationIssues(
    [
      {
        path: "/body/items/0/filename",
        message: "must have required property 'filename'",
        errorCode: "required.openapi.validation",
      },
    ],
    request({ items: [{ file_size: 1 }] }),
  );
  t.same(issue, {
    loc: ["body", "items", 0, "filename"],
    msg: "Field required",
    type: "missing",
    input: { file_size: 1 },
  });
});

t.test("JSON pointer escapes are decoded in loc", async (t) => {
  t.same(locFromPath("/body/a~1b/c~0d"), ["body", "a/b", "c~d"]);
  t.same(locFromPath("/headers/idempotency-key"), ["header", "idempotency-key"]);
  t.same(locFromPath("/params/submission_id"), ["path", "submission_id"]);
});

t.test("a body field the schema does not declare is extra_forbidden, with its value", async (t) => {
  const [issue] = toValidationIssues(
    [
      {
        path: "/body/misspelt",
        message: "must NOT have additional properties",
        errorCode: "additionalProperties.openapi.validation",
      },
    ],
    request({ misspelt: 7 }),
  );
  t.same(issue, {
    loc: ["body", "misspelt"],
    msg: "Extra inputs are not permitted",
    type: "extra_forbidden",
    input: 7,
  });
});

t.test("a query parameter the operation does not declare is extra_forbidden", async (t) => {
  const [issue] = toValidationIssues([{ path: "/query/foo", message: "Unknown query parameter 'foo'" }], {
    body: undefined,
    query: { foo: "bar" },
    params: {},
    headers: {},
  } as unknown as Request);
  t.same(issue, {
    loc: ["query", "foo"],
    msg: "Extra inputs are not permitted",
    type: "extra_forbidden",
    input: "bar",
  });
});
