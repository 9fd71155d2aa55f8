// A consumer of the packed contract package, compiled in strict mode by test/contract/package.test.ts
// against the tarball `npm pack` makes (not against the repository's sources).
import { createIntegratorClient, withIdempotencyKey, type Schemas, type WebhookEvent } from "integrator-api-contract";
import type { paths } from "integrator-api-contract/types";

export async function submitOne(baseUrl: string, token: string): Promise<Schemas["IntakeSubmissionResponse"]> {
  const api = createIntegratorClient({ baseUrl, token: () => token });
  const { data, error, response } = await api.POST("/v1/intake/submit", {
    body: { filename: "claim-4711.pdf", file_size: 482133, mime_type: "application/pdf", module: "claims" },
    ...withIdempotencyKey("order-4711"),
  });
  if (error) throw new Error(`submit failed with ${response.status}: ${JSON.stringify(error)}`);
  const accepted: number = data.accepted_count;
  if (accepted < 0) throw new Error("impossible");
  return data;
}

export async function whoAmI(baseUrl: string, token: string): Promise<string> {
  const api = createIntegratorClient({ baseUrl, token });
  const { data } = await api.GET("/v1/me");
  return data ? `${data.subject} of ${data.tenant_id} (${data.roles.join(", ")})` : "nobody";
}

export function onEvent(event: WebhookEvent<"intake.submitted">): string {
  const kind: "intake.submitted" = event.event;
  return `${kind} ${event.data.submission_id}`;
}

export type SubmitPath = keyof paths;
