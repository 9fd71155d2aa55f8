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
