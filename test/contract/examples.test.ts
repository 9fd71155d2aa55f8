// Every request body, every response with a body and every webhook event of the document, as it is at run
// time, carries at least one example, and every example validates against its schema; so does every query
// parameter (each filter; the reference page shows the example beside it, and the SDK sample of its
// operation uses it) and every path parameter. An optional query parameter's example is marked
// `x-disabled: true`, so the reference page's try it shows it unticked and sends no filter by itself.
import t from "tap";
import { mediaCases, parameterCases, schemaValidator } from "../helpers/openapi-media.ts";

t.test("every request body, response body and webhook event has an example that validates", async (t) => {
  const compile = schemaValidator();
  const cases = mediaCases();
  t.ok(cases.length > 50, `${cases.length} bodies found`);
  for (const { where, schema, examples } of cases) {
    t.ok(examples.length > 0, `${where} has an example`);
    const validate = compile(schema);
    for (const { name, value } of examples) {
      const valid = validate(value);
      t.ok(valid, `${where} example ${name} validates`, valid ? {} : { errors: validate.errors });
    }
  }
});

t.test("the example check catches an example that breaks its schema", async (t) => {
  const validate = schemaValidator()({ $ref: "#/components/schemas/IntakeSubmitRequest" });
  t.notOk(validate({ filename: "a.pdf", file_size: "big", mime_type: "application/pdf" }));
});

t.test("every query and path parameter has an example that validates", async (t) => {
  const compile = schemaValidator();
  const cases = parameterCases();
  const filters = cases.filter((parameter) => parameter.in === "query" || parameter.in === "path");
  t.ok(filters.length > 30, `${filters.length} query and path parameters found`);
  t.same(
    filters.filter((parameter) => parameter.examples.length === 0).map((parameter) => parameter.where),
    [],
    "none without an example",
  );
  for (const { where, schema, examples } of cases) {
    const validate = compile(schema);
    for (const { name, value } of examples) {
      const valid = validate(value);
      t.ok(valid, `${where} example ${name} validates`, valid ? {} : { errors: validate.errors });
    }
  }
});

t.test("an optional query parameter's example is left unticked in try it (x-disabled: true)", async (t) => {
  const optional = parameterCases().filter((parameter) => parameter.in === "query" && !parameter.required);
  t.ok(optional.length > 20, `${optional.length} optional query parameters`);
  t.same(
    optional
      .filter((parameter) => parameter.examples.some((example) => example.disabled !== true))
      .map((parameter) => parameter.where),
    [],
    "every example of each is x-disabled: true (a plain `example` cannot be)",
  );
});
