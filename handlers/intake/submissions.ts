// Registering review work: the one-statement write (submission, items, audit action, webhook event;
// with an Idempotency-Key also the remembered response, in one transaction) and reading a submission back.
import type { Principal } from "../../foundation/auth/tokens.ts";
import { ApiError, notFound } from "../../http/errors.ts";
import { idempotent, type IdempotentOutcome } from "../../http/idempotency.ts";
import type { Services } from "../../foundation/services.ts";
import { currentTraceCarrier, inSpan } from "../../foundation/tracing.ts";
import { RequestValidationError } from "../../http/validation.ts";
import { isUuid } from "../../db/ids.ts";
import {
  findSubmission,
  insertSubmissionOnce,
  insertSubmissionWithEvent,
  type ItemRow,
  type NewItem,
  type SubmissionRow,
} from "../../db/intake.ts";

import { itemRejection, metadataIssues, storedFilename, storedMediaType, type IntakeItemInput } from "./item-rules.ts";
import { aggregate } from "./submission-status.ts";

export interface IntakeRequest {
  principal: Principal;
  tenantId: string;
  kind: "single" | "batch";
  /** The validated body as sent (the fingerprint covers exactly what the caller sent). */
  body: unknown;
  items: IntakeItemInput[];
  externalReference: string | null;
  module: string | null;
  tier: string | null;
  idempotencyKey: string | undefined;
  requestId: string;
}

export type SubmissionResponse = SubmissionRow;

const AUDIT_ACTION = { single: "intake.submitted", batch: "intake.batch_submitted" } as const;
/** The Idempotency-Key scope of each intake route: submit and batch keys never meet. */
const IDEMPOTENCY_SCOPE = { single: "intake.submit", batch: "intake.batch" } as const;

export async function submitIntake(
  services: Services,
  request: IntakeRequest,
): Promise<IdempotentOutcome<SubmissionResponse>> {
  const issues = metadataIssues(request.items, (index) =>
    request.kind === "single" ? ["body", "item_metadata"] : ["body", "items", index, "item_metadata"],
  );
  if (issues.length > 0) throw new RequestValidationError(issues);

  const items: NewItem[] = request.items.map((item) => {
    const stored = {
      filename: storedFilename(item.filename),
      file_size: item.file_size,
      mime_type: storedMediaType(item.mime_type),
    };
    const rejection = itemRejection(stored, services.config.intake);
    return {
      ...stored,
      item_metadata: item.item_metadata ?? null,
      status: rejection ? "rejected" : "pending",
      error_message: rejection ?? null,
    };
  });
  const totals = aggregate(items.map((item) => item.status));
  // One statement writes everything and emits the event; with a key, the same statement takes the
  // key, answers a replay instead of writing, or remembers the response it writes.
  const submission = {
    tenantId: request.tenantId,
    kind: request.kind,
    externalReference: request.externalReference,
    module: request.module,
    tier: request.tier,
    status: totals.status,
    acceptedCount: totals.acceptedCount,
    failedCount: totals.failedCount,
    createdBy: request.principal.subject,
    requestId: request.requestId,
  };
  const audit = {
    action: AUDIT_ACTION[request.kind],
    actor: request.principal.subject,
    requestId: request.requestId,
    details: {
      item_count: items.length,
      accepted_count: totals.acceptedCount,
      failed_count: totals.failedCount,
      actor_tenant_id: request.principal.tenantId,
    },
  };

  // The statement that emits the event and queues its jobs, as a span of its own (with tracing on): the
  // jobs carry its trace context, so the worker's spans of them are its children.
  const emitting = <T>(write: (trace: ReturnType<typeof currentTraceCarrier>) => Promise<T>): Promise<T> =>
    inSpan(
      `emit ${audit.action}`,
      {
        kind: "producer",
        attributes: {
          "messaging.system": "graphile_worker",
          "messaging.operation.type": "send",
          "integrator.tenant_id": request.tenantId,
          "integrator.event_type": audit.action,
          "integrator.request_id": request.requestId,
        },
      },
      () => write(currentTraceCarrier()),
    );

  try {
    return await idempotent<SubmissionResponse>({
      services,
      scope:
        request.idempotencyKey === undefined
          ? undefined
          : {
              tenantId: request.principal.tenantId,
              subject: request.principal.subject,
              route: IDEMPOTENCY_SCOPE[request.kind],
              key: request.idempotencyKey,
            },
      body: request.body,
      tenantId: request.tenantId,
      // Without a key: the one statement in autocommit (durable commit), no transaction around it.
      write: async () => ({
        status: 201,
        body: await emitting((trace) => insertSubmissionWithEvent(services.db, submission, items, audit, trace)),
      }),
      writeOnce: (key) => emitting((trace) => insertSubmissionOnce(services.db, key, submission, items, audit, trace)),
    });
  } catch (error) {
    // A tenant that is not registered here (e.g. named by a platform_admin or an external IdP token).
    if ((error as { code?: string }).code === "23503") throw new ApiError("NOT_FOUND", "Tenant not found");
    throw error;
  }
}

export async function getSubmission(
  services: Services,
  tenantId: string,
  submissionId: string,
): Promise<{ submission: SubmissionRow; items: ItemRow[] }> {
  // Another tenant's submission answers exactly like a missing one.
  const found = isUuid(submissionId)
    ? await findSubmission(services.db, tenantId, submissionId.toLowerCase())
    : undefined;
  if (!found) throw notFound("Submission");
  return found;
}
