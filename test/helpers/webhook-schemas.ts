// The document's top-level `webhooks` section as validators: the request body schema of each event
// kind, and the headers each delivery must carry, compiled with ajv (JSON Schema 2020-12, as OpenAPI 3.1
// uses) from generated/openapi.json.
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import document from "../../generated/openapi.json" with { type: "json" };

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface WebhookOperation {
  post: {
    requestBody: { content: { "application/json": { schema: { $ref: string } } } };
    parameters?: { $ref: string }[];
  };
}

interface HeaderParameter {
  name: string;
  in: string;
  required?: boolean;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...document, $id: "openapi.json" });

const validators = new Map<string, ValidateFunction>();
/** The headers of each kind's delivery: name (lower case), whether required, and its schema's validator. */
const headerValidators = new Map<string, { name: string; required: boolean; validate: ValidateFunction }[]>();
for (const [kind, operation] of Object.entries(document.webhooks as unknown as Record<string, WebhookOperation>)) {
  const ref = operation.post.requestBody.content["application/json"].schema.$ref;
  const validate = ajv.getSchema(`openapi.json${ref}`);
  if (!validate) throw new Error(`no schema at ${ref}`);
  validators.set(kind, validate);
  headerValidators.set(
    kind,
    (operation.post.parameters ?? []).map(({ $ref }) => {
      const parameter = $ref
        .slice(2)
        .split("/")
        .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], document) as
        HeaderParameter | undefined;
      const schema = ajv.getSchema(`openapi.json${$ref}/schema`);
      if (!parameter || parameter.in !== "header" || !schema) throw new Error(`no header parameter at ${$ref}`);
      return { name: parameter.name.toLowerCase(), required: parameter.required === true, validate: schema };
    }),
  );
}

/** The event kinds the document describes. */
export const documentedKinds = [...validators.keys()];

/** Problems of `body` against the webhooks schema of `kind` (empty when valid). */
export function webhookSchemaErrors(kind: string, body: unknown): string[] {
  const validate = validators.get(kind);
  if (!validate) return [`the document has no webhook ${kind}`];
  if (validate(body)) return [];
  return (validate.errors ?? []).map((error) => `${error.instancePath || "/"} ${error.message ?? error.keyword}`);
}

/**
 * Problems of a whole delivery as a receiver got it (method, headers, raw body) against the webhooks
 * section: a JSON POST whose body matches its event kind's schema, carrying every header the kind
 * declares, each matching its schema, and `X-Service-Review-Event` equal to the body's `event`.
 */
export function webhookRequestErrors(request: {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
}): string[] {
  let body: unknown;
  try {
    body = JSON.parse(request.rawBody.toString("utf8"));
  } catch {
    return ["the body is not JSON"];
  }
  const kind = typeof body === "object" && body !== null ? (body as { event?: unknown }).event : undefined;
  if (typeof kind !== "string") return ["the body has no string `event`"];
  const problems: string[] = [];
  if (request.method !== "POST") problems.push(`method ${request.method}, not POST`);
  if (!/^application\/json\b/.test(String(request.headers["content-type"] ?? "")))
    problems.push(`Content-Type ${String(request.headers["content-type"])}, not application/json`);
  for (const header of headerValidators.get(kind) ?? []) {
    const value = request.headers[header.name];
    if (value === undefined) {
      if (header.required) problems.push(`header ${header.name} is missing`);
      continue;
    }
    if (!header.validate(Array.isArray(value) ? value.join(", ") : value))
      problems.push(`header ${header.name} ${JSON.stringify(value)} does not match its schema`);
  }
  if (request.headers["x-service-review-event"] !== kind)
    problems.push(
      `X-Service-Review-Event ${String(request.headers["x-service-review-event"])} is not the body's event ${kind}`,
    );
  return [...problems, ...webhookSchemaErrors(kind, body).map((problem) => `body ${problem}`)];
}
