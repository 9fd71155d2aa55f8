// The example event of each subscribable kind, as the document shows it (the first example of the kind's
// request body in the top-level `webhooks` section): what "send an example" (sendWebhookTestEvent with
// `event_type`) delivers, with the real tenant and time.
import type { OpenAPIV3_1 } from "openapi-types";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";
import type { components } from "../../generated/openapi.ts";

type EventKind = components["schemas"]["WebhookEventKind"];
type EventPayload = components["schemas"]["WebhookEventPayload"];

let examples: Map<string, Record<string, unknown>> | undefined;

function documentExamples(): Map<string, Record<string, unknown>> {
  const document = loadDocument();
  const found = new Map<string, Record<string, unknown>>();
  for (const [kind, item] of Object.entries(document.webhooks ?? {})) {
    const operation = (item as OpenAPIV3_1.PathItemObject).post;
    const body = resolveRef(document, operation?.requestBody) as OpenAPIV3_1.RequestBodyObject | undefined;
    const first = Object.values(body?.content["application/json"]?.examples ?? {})[0];
    const example = resolveRef(document, first) as OpenAPIV3_1.ExampleObject | undefined;
    const data = (example?.value as { data?: unknown } | undefined)?.data;
    if (data && typeof data === "object") found.set(kind, data as Record<string, unknown>);
  }
  return found;
}

/**
 * The example payload of `kind` as event `id` of `tenantId`, stamped `timestamp` (the examples match their
 * schemas: test/contract/examples.test.ts), marked `test: true`: a receiver tells it from a real event.
 */
export function examplePayload(kind: EventKind, id: string, tenantId: string, timestamp: string): EventPayload {
  examples ??= documentExamples();
  const data = examples.get(kind);
  // test/webhooks checks that every kind has one; a kind without would be a defect of the document.
  if (!data) throw new Error(`the document has no example event of kind ${kind}`);
  return { id, event: kind, tenant_id: tenantId, timestamp, data: structuredClone(data), test: true } as EventPayload;
}
