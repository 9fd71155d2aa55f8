// Every request body, every response with a body and every webhook event of the document, as it is at run
// time, carries at least one example, and every example validates against its schema.
import t from "tap";
import { mediaCases, schemaValidator } from "../helpers/openapi-media.ts";

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
