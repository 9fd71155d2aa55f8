// A consumer of the packed contract package, compiled in strict mode by test/contract/package.test.ts
// against the tarball `npm pack` makes (not against the repository's sources).
import {
  createIntegratorClient,
  createTokenProvider,
  TokenRequestError,
  withIdempotencyKey,
  type ApiError,
  type HTTPValidationError,
  type IntakeSubmission,
  type RetryNotice,
  type Schemas,
  type WebhookEvent,
  type WebhookSubscription,
} from "integrator-api-contract";
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

export async function asApiClient(baseUrl: string, clientId: string, clientSecret: string): Promise<string> {
  const retries: RetryNotice[] = [];
  const token = createTokenProvider({ baseUrl, clientId, clientSecret, clientAuthentication: "basic" });
  const api = createIntegratorClient({
    baseUrl,
    token,
    retry: { maxAttempts: 4, maxWaitSeconds: 30, onRetry: (retry) => retries.push(retry) },
  });
  try {
    const { data } = await api.POST("/v1/intake/batch", {
      body: { items: [{ filename: "a.pdf", file_size: 1, mime_type: "application/pdf" }] },
    });
    return `${data?.id ?? "refused"} after ${retries.length} retries`;
  } catch (error) {
    if (error instanceof TokenRequestError && error.error === "invalid_client") token.invalidate();
    throw error;
  }
}

export async function whoAmI(baseUrl: string, username: string, password: string): Promise<string> {
  const api = createIntegratorClient({ baseUrl, token: createTokenProvider({ baseUrl, username, password }) });
  const { data } = await api.GET("/v1/me");
  return data ? `${data.subject} of ${data.tenant_id} (${data.roles.join(", ")})` : "nobody";
}

export function onEvent(event: WebhookEvent<"intake.submitted">): string {
  const kind: "intake.submitted" = event.event;
  return `${kind} ${event.data.submission_id}`;
}

/** The named types are the document's schemas: what the client answers is assignable to them. */
export async function activeEndpoints(
  baseUrl: string,
  token: string,
): Promise<WebhookSubscription[] | ApiError | HTTPValidationError> {
  const api = createIntegratorClient({ baseUrl, token });
  const { data, error } = await api.GET("/v1/webhooks/subscriptions");
  if (error) return error;
  return data.subscriptions.filter((subscription) => subscription.status === "active");
}

export const sameSubmission = (submission: IntakeSubmission): Schemas["IntakeSubmissionResponse"] => submission;

export type SubmitPath = keyof paths;
