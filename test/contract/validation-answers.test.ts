// Every operation that reads a parameter or a body answers a schema violation with a status its document
// lists (422 HTTPValidationError, or what its `x-validation-error` declares), and the answer has the
// documented shape. The readiness probe once answered an undocumented 422 for an unknown `scope`.
import t from "tap";
import type { OpenAPIV3_1 } from "openapi-types";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";
import { schemaValidator } from "../helpers/openapi-media.ts";
import { startTestServer } from "../helpers/server.ts";

const document = loadDocument();
const METHODS = ["get", "put", "post", "delete", "patch"] as const;

t.test("every operation that reads input documents the answer to its violations", async (t) => {
  for (const [path, pathItem] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = (pathItem as OpenAPIV3_1.PathItemObject)[method];
      if (!operation?.operationId) continue;
      const reads = (operation.parameters ?? []).length > 0 || operation.requestBody !== undefined;
      if (!reads) continue;
      const override = operation["x-validation-error" as keyof typeof operation] as { status?: number } | undefined;
      const status = String(override?.status ?? 422);
      t.ok(operation.responses?.[status], `${method} ${path} (${operation.operationId}) lists ${status}`);
    }
  }
});

t.test("readiness with a scope it does not know answers the documented 422", async (t) => {
  const server = await startTestServer(t);
  const res = await server.request("/v1/readyz?scope=everything");
  t.equal(res.status, 422);
  const body: unknown = await res.json();
  t.match(body, { detail: [{ loc: ["query", "scope"], type: "enum", input: "everything" }] });
  const response = resolveRef(document, document.paths?.["/v1/readyz"]?.get?.responses?.["422"]) as
    OpenAPIV3_1.ResponseObject | undefined;
  const media = response?.content?.["application/json"];
  t.ok(media?.schema, "the document declares the 422 body");
  const validate = schemaValidator()(media?.schema);
  t.ok(validate(body), JSON.stringify(validate.errors));
  const example = Object.values(media?.examples ?? {})[0] as { value?: unknown } | undefined;
  t.ok(example?.value, "the 422 has an example");
  t.ok(validate(example?.value), "the example matches its schema");
});
