// Every body of the document as it is at run time: each request body, response and webhook event with its
// schema and examples, and a validator of any schema of the document (ajv, JSON Schema 2020-12).
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";

type Node = Record<string, unknown>;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;
const DOCUMENT_ID = "urn:integrator-api:openapi";

/** The schema with its local $refs pointing into the registered document. */
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

export function schemaValidator(): (schema: unknown) => ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: DOCUMENT_ID, components: rebase(loadDocument().components) });
  return (schema) => ajv.compile(rebase(schema ?? {}) as never);
}

export interface MediaCase {
  /** "path" or "webhook". */
  kind: string;
  method: string;
  path: string;
  /** "request body" or "response <status>". */
  part: string;
  status: string | undefined;
  mediaType: string;
  where: string;
  schema: unknown;
  examples: { name: string; value: unknown }[];
}

export function mediaCases(): MediaCase[] {
  const document = loadDocument();
  const resolve = (value: unknown) => resolveRef(document, value) as Node | undefined;
  const cases: MediaCase[] = [];
  const collect = (base: Omit<MediaCase, "mediaType" | "where" | "schema" | "examples">, content: unknown) => {
    for (const [mediaType, raw] of Object.entries((content ?? {}) as Node)) {
      const media = raw as Node;
      const examples: { name: string; value: unknown }[] = [];
      if ("example" in media) examples.push({ name: "example", value: media.example });
      for (const [name, example] of Object.entries((media.examples ?? {}) as Node)) {
        const resolved = resolve(example);
        if (resolved && "value" in resolved) examples.push({ name, value: resolved.value });
      }
      const where = `${base.kind} ${base.method.toUpperCase()} ${base.path} ${base.part} ${mediaType}`;
      cases.push({ ...base, mediaType, where, schema: media.schema, examples });
    }
  };
  for (const [kind, items] of [
    ["path", document.paths],
    ["webhook", document.webhooks],
  ] as const) {
    for (const [path, pathItem] of Object.entries((items ?? {}) as Node)) {
      for (const method of METHODS) {
        const operation = (pathItem as Node)[method] as Node | undefined;
        if (!operation) continue;
        const body = resolve(operation.requestBody);
        if (body) collect({ kind, method, path, part: "request body", status: undefined }, body.content);
        for (const [status, response] of Object.entries((operation.responses ?? {}) as Node))
          collect({ kind, method, path, part: `response ${status}`, status }, resolve(response)?.content);
      }
    }
  }
  return cases;
}

export interface ParameterCase {
  /** "GET /v1/webhooks/deliveries query status". */
  where: string;
  in: string;
  name: string;
  required: boolean;
  schema: unknown;
  /** Each example with its `x-disabled` (true: the reference page's try it leaves it unticked). */
  examples: { name: string; value: unknown; disabled?: unknown }[];
}

/** Every parameter of every path operation (its path item's included) with its schema and examples. */
export function parameterCases(): ParameterCase[] {
  const document = loadDocument();
  const resolve = (value: unknown) => resolveRef(document, value) as Node | undefined;
  const cases: ParameterCase[] = [];
  for (const [path, raw] of Object.entries((document.paths ?? {}) as Node)) {
    const pathItem = resolve(raw) ?? {};
    for (const method of METHODS) {
      const operation = pathItem[method] as Node | undefined;
      if (!operation) continue;
      const listed = [...((pathItem.parameters ?? []) as unknown[]), ...((operation.parameters ?? []) as unknown[])];
      for (const parameter of listed.map(resolve)) {
        if (!parameter) continue;
        const examples: ParameterCase["examples"] = [];
        if ("example" in parameter) examples.push({ name: "example", value: parameter.example });
        for (const [name, example] of Object.entries((parameter.examples ?? {}) as Node)) {
          const resolved = resolve(example);
          if (resolved && "value" in resolved)
            examples.push({ name, value: resolved.value, disabled: resolved["x-disabled"] });
        }
        const place = String(parameter.in);
        const name = String(parameter.name);
        cases.push({
          where: `${method.toUpperCase()} ${path} ${place} ${name}`,
          in: place,
          name,
          required: parameter.required === true,
          schema: parameter.schema,
          examples,
        });
      }
    }
  }
  return cases;
}
