// The document's top-level `webhooks` section as validators: the request body schema of each event
// kind, compiled with ajv (JSON Schema 2020-12, as OpenAPI 3.1 uses) from generated/openapi.json.
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import document from "../../generated/openapi.json" with { type: "json" };

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface WebhookOperation {
  post: { requestBody: { content: { "application/json": { schema: { $ref: string } } } } };
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...document, $id: "openapi.json" });

const validators = new Map<string, ValidateFunction>();
for (const [kind, operation] of Object.entries(document.webhooks as unknown as Record<string, WebhookOperation>)) {
  const ref = operation.post.requestBody.content["application/json"].schema.$ref;
  const validate = ajv.getSchema(`openapi.json${ref}`);
  if (!validate) throw new Error(`no schema at ${ref}`);
  validators.set(kind, validate);
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
