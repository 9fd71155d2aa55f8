// Every request body, every response with a body and every webhook event of the document, as it is at run
// time, carries at least one example, and every example validates against its schema.
import t from "tap";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { loadDocument, resolveRef } from "../server/http/openapi-document.ts";

type Node = Record<string, unknown>;
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;
const DOCUMENT_ID = "urn:integrator-api:openapi";

function rebase(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rebase);
  if (!node || typeof node !== "object") return node;
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === "$ref" && typeof value === "string" && value.startsWith("#/") ? `${DOCUMENT_ID}${value}` : rebase(value),
    ]),
  );
}

interface MediaCase {
  where: string;
  schema: unknown;
  examples: { name: string; value: unknown }[];
}

function mediaCases(): MediaCase[] {
  const document = loadDocument();
  const resolve = (value: unknown) => resolveRef(document, value) as Node | undefined;
  const cases: MediaCase[] = [];
  const collect = (where: string, content: unknown) => {
    for (const [mediaType, raw] of Object.entries((content ?? {}) as Node)) {
      const media = raw as Node;
      const examples: { name: string; value: unknown }[] = [];
      if ("example" in media) examples.push({ name: "example", value: media.example });
      for (const [name, example] of Object.entries((media.examples ?? {}) as Node)) {
        const resolved = resolve(example);
        if (resolved && "value" in resolved) examples.push({ name, value: resolved.value });
      }
      cases.push({ where: `${where} ${mediaType}`, schema: media.schema, examples });
    }
  };
  const visitOperations = (kind: string, items: Record<string, unknown> | undefined) => {
    for (const [key, pathItem] of Object.entries(items ?? {})) {
      for (const method of METHODS) {
        const operation = (pathItem as Node)[method] as Node | undefined;
        if (!operation) continue;
        const name = `${kind} ${method.toUpperCase()} ${key}`;
        const body = resolve(operation.requestBody);
        if (body) collect(`${name} request body`, body.content);
        for (const [status, response] of Object.entries((operation.responses ?? {}) as Node))
          collect(`${name} response ${status}`, resolve(response)?.content);
      }
    }
  };
  visitOperations("path", document.paths);
  visitOperations("webhook", document.webhooks);
  return cases;
}

t.test("every request body, response body and webhook event has an example that validates", async (t) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: DOCUMENT_ID, components: rebase(loadDocument().components) });
  const cases = mediaCases();
  t.ok(cases.length > 50, `${cases.length} bodies found`);
  for (const { where, schema, examples } of cases) {
    t.ok(examples.length > 0, `${where} has an example`);
    const validate = ajv.compile(rebase(schema ?? {}) as never);
    for (const { name, value } of examples) {
      const valid = validate(value);
      t.ok(valid, `${where} example ${name} validates`, valid ? {} : { errors: validate.errors });
    }
  }
});

t.test("the example check catches an example that breaks its schema", async (t) => {
  const ajv = new Ajv2020({ strict: false });
  addFormats.default(ajv);
  ajv.addSchema({ $id: DOCUMENT_ID, components: rebase(loadDocument().components) });
  const validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/components/schemas/IntakeSubmitRequest` });
  t.notOk(validate({ filename: "a.pdf", file_size: "big", mime_type: "application/pdf" }));
});
