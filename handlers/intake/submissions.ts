// Intake of review work: the item rules applied after the schema, the aggregate status, the
// one-transaction write (submission, items, idempotency record, audit action, webhook events) and
// the status moves operators make with the admin CLI.
import type { Knex } from "knex";
import type { Principal } from "../../server/auth/tokens.ts";
import type { Config } from "../../server/config.ts";
import { ApiError, notFound } from "../../server/http/errors.ts";
import { requestFingerprint, runIdempotent, type IdempotentOutcome } from "../../server/http/idempotency.ts";
import type { Services } from "../../server/services.ts";
import { RequestValidationError, valueError, type ValidationIssue } from "../../server/http/validation.ts";
import { depthOf } from "../../server/json-limits.ts";
import { emitEvent } from "../../db/events.ts";
import { isUuid } from "../../db/ids.ts";
import {
  findSubmission,
  insertSubmission,
  itemStatuses,
  lockItem,
  updateItem,
  updateSubmissionTotals,
  type ItemRow,
  type ItemStatus,
  type NewItem,
  type SubmissionRow,
  type SubmissionStatus,
} from "../../db/intake.ts";

export const METADATA_MAX_BYTES = 16 * 1024;
export const METADATA_MAX_DEPTH = 5;

export interface IntakeItemInput {
  filename: string;
  file_size: number;
  mime_type: string;
  item_metadata?: Record<string, unknown> | null;
}

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
const ROUTE = { single: "intake.submit", batch: "intake.batch" } as const;

/** item_metadata limits (16 KiB as JSON, nesting depth 5), reported as 422 value_error at the item's path. */
export function metadataIssues(
  items: IntakeItemInput[],
  locOf: (index: number) => (string | number)[],
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  items.forEach((item, index) => {
    const metadata = item.item_metadata;
    if (metadata === undefined || metadata === null) return;
    // Depth first: serialising a very deep value to measure it would exhaust the stack.
    if (depthOf(metadata, METADATA_MAX_DEPTH) > METADATA_MAX_DEPTH) {
      issues.push(valueError(locOf(index), `item_metadata must be nested at most ${METADATA_MAX_DEPTH} levels deep`));
      return;
    }
    const size = Buffer.byteLength(JSON.stringify(metadata), "utf8");
    if (size > METADATA_MAX_BYTES)
      issues.push(
        valueError(locOf(index), `item_metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON, got ${size}`),
      );
  });
  return issues;
}

/** The rules checked after the schema; each rejects its item only. Returns why, or undefined. */
export function itemRejection(item: IntakeItemInput, intake: Config["intake"]): string | undefined {
  const mediaType = item.mime_type.split(";")[0]?.trim().toLowerCase() ?? "";
  if (!intake.allowedMimeTypes.includes(mediaType)) return `mime_type ${item.mime_type} is not accepted`;
  if (item.file_size > intake.maxFileSizeBytes)
    return `file_size exceeds the maximum of ${intake.maxFileSizeBytes} bytes`;
  if (/[/\\]/.test(item.filename)) return "filename must not contain a path separator";
  if (/[\u0000-\u001f\u007f]/.test(item.filename)) return "filename must not contain control characters";
  if (/^\.+$/.test(item.filename)) return "filename must not consist of dots only";
  return undefined;
}

/** The submission's status and counts, derived from its items' statuses. */
export function aggregate(statuses: ItemStatus[]): {
  status: SubmissionStatus;
  acceptedCount: number;
  failedCount: number;
} {
  const rejected = statuses.filter((status) => status === "rejected").length;
  const failed = statuses.filter((status) => status === "failed").length;
  const live = statuses.filter((status) => status !== "rejected");
  const acceptedCount = statuses.length - rejected;
  const failedCount = rejected + failed;
  let status: SubmissionStatus;
  if (live.length === 0) status = "rejected";
  else if (live.every((s) => s === "completed" || s === "failed"))
    status = failedCount > 0 ? "completed_with_errors" : "completed";
  else if (live.some((s) => s !== "pending")) status = "processing";
  else status = "received";
  return { status, acceptedCount, failedCount };
}

export async function submitIntake(
  services: Services,
  request: IntakeRequest,
): Promise<IdempotentOutcome<SubmissionResponse>> {
  const issues = metadataIssues(request.items, (index) =>
    request.kind === "single" ? ["body", "item_metadata"] : ["body", "items", index, "item_metadata"],
  );
  if (issues.length > 0) throw new RequestValidationError(issues);

  const items: NewItem[] = request.items.map((item) => {
    const rejection = itemRejection(item, services.config.intake);
    return {
      filename: item.filename,
      file_size: item.file_size,
      mime_type: item.mime_type,
      item_metadata: item.item_metadata ?? null,
      status: rejection ? "rejected" : "pending",
      error_message: rejection ?? null,
    };
  });
  const totals = aggregate(items.map((item) => item.status));
  const scope =
    request.idempotencyKey === undefined
      ? undefined
      : {
          tenantId: request.principal.tenantId,
          subject: request.principal.subject,
          route: ROUTE[request.kind],
          key: request.idempotencyKey,
        };

  try {
    return await runIdempotent(
      services.db,
      scope,
      requestFingerprint(request.body, request.tenantId),
      services.config.idempotencyTtlHours,
      async (trx) => {
        const submission = await insertSubmission(
          trx,
          {
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
          },
          items,
          {
            action: AUDIT_ACTION[request.kind],
            actor: request.principal.subject,
            requestId: request.requestId,
            details: {
              item_count: items.length,
              accepted_count: totals.acceptedCount,
              failed_count: totals.failedCount,
              actor_tenant_id: request.principal.tenantId,
            },
          },
        );
        // Only here, on a first successful call: replays return before reaching the work.
        await emitEvent(trx, request.tenantId, AUDIT_ACTION[request.kind], {
          submission_id: submission.id,
          external_reference: submission.external_reference,
          module: submission.module,
          tier: submission.tier,
          status: submission.status,
          item_count: submission.item_count,
          accepted_count: submission.accepted_count,
          failed_count: submission.failed_count,
        });
        return { status: 201, body: submission };
      },
    );
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

/** Item moves an operator (or the document pipeline) may make; rejected is final at intake. */
const ITEM_TRANSITIONS: Record<ItemStatus, ItemStatus[]> = {
  pending: ["uploaded", "processing", "failed"],
  uploaded: ["processing", "completed", "failed"],
  processing: ["completed", "failed"],
  failed: ["processing"],
  completed: [],
  rejected: [],
};

export class ItemChangeRefused extends Error {
  override name = "ItemChangeRefused";
}

export interface ItemChange {
  item: ItemRow;
  previousStatus: ItemStatus;
  submission: SubmissionRow;
}

async function changeItem(
  services: Services,
  itemId: string,
  decide: (item: ItemRow) => Partial<Pick<ItemRow, "document_id" | "status" | "error_message">>,
): Promise<ItemChange> {
  if (!isUuid(itemId)) throw new ItemChangeRefused(`--item ${itemId} is not an item id`);
  return services.db.transaction(async (trx) => {
    const current = await lockItem(trx, itemId.toLowerCase());
    if (!current) throw new ItemChangeRefused(`item ${itemId} does not exist`);
    const item = await updateItem(trx, current.tenant_id, current.id, decide(current));
    const totals = aggregate(await itemStatuses(trx, current.tenant_id, current.submission_id));
    const submission = await updateSubmissionTotals(trx, current.tenant_id, current.submission_id, totals);
    await emitDocumentEvents(trx, current.tenant_id, item, current.status);
    return { item, previousStatus: current.status, submission };
  });
}

/** Document lifecycle events for an item linked to a document, in the transaction that changed it. */
async function emitDocumentEvents(
  trx: Knex.Transaction,
  tenantId: string,
  item: ItemRow,
  previousStatus: ItemStatus,
): Promise<void> {
  if (!item.document_id || item.status === previousStatus) return;
  const data = {
    document_id: item.document_id,
    submission_id: item.submission_id,
    item_id: item.id,
    status: item.status,
    previous_status: previousStatus,
  };
  await emitEvent(trx, tenantId, "document.status_changed", data);
  if (item.status === "uploaded") await emitEvent(trx, tenantId, "document.uploaded", data);
  if (item.status === "completed") await emitEvent(trx, tenantId, "document.completed", data);
}

/** Links an accepted item to its document; a pending item becomes uploaded. */
export function linkItem(services: Services, itemId: string, documentId: string): Promise<ItemChange> {
  if (!isUuid(documentId)) throw new ItemChangeRefused("--document-id must be a document UUID");
  return changeItem(services, itemId, (item) => {
    if (item.status === "rejected") throw new ItemChangeRefused("a rejected item cannot be linked to a document");
    return {
      document_id: documentId.toLowerCase(),
      ...(item.status === "pending" ? { status: "uploaded" as const } : {}),
    };
  });
}

export function setItemStatus(
  services: Services,
  itemId: string,
  status: string,
  errorMessage: string | undefined,
): Promise<ItemChange> {
  if (!(status in ITEM_TRANSITIONS) || status === "rejected") {
    throw new ItemChangeRefused(
      `--status must be one of ${Object.keys(ITEM_TRANSITIONS)
        .filter((s) => s !== "rejected")
        .join(", ")}`,
    );
  }
  const next = status as ItemStatus;
  return changeItem(services, itemId, (item) => {
    if (!ITEM_TRANSITIONS[item.status].includes(next))
      throw new ItemChangeRefused(`an item cannot move from ${item.status} to ${next}`);
    return {
      status: next,
      error_message: next === "failed" ? (errorMessage ?? "processing failed").slice(0, 1000) : null,
    };
  });
}
