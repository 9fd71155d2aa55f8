// Queries of intake submissions and items. Every query is led by tenant_id (the primary keys').
import type { Knex } from "knex";

export type ItemStatus = "pending" | "uploaded" | "processing" | "completed" | "failed" | "rejected";
export type SubmissionStatus = "received" | "processing" | "completed" | "completed_with_errors" | "rejected";

export interface SubmissionRow {
  id: string;
  tenant_id: string;
  external_reference: string | null;
  module: string | null;
  tier: string | null;
  item_count: number;
  accepted_count: number;
  failed_count: number;
  status: SubmissionStatus;
  created_by: string;
  created_at: string;
}

export interface ItemRow {
  id: string;
  submission_id: string;
  document_id: string | null;
  filename: string;
  file_size: number;
  mime_type: string;
  item_metadata: Record<string, unknown> | null;
  status: ItemStatus;
  error_message: string | null;
}

export interface NewItem {
  filename: string;
  file_size: number;
  mime_type: string;
  item_metadata: Record<string, unknown> | null;
  status: ItemStatus;
  error_message: string | null;
}

export interface NewSubmission {
  tenantId: string;
  kind: "single" | "batch";
  externalReference: string | null;
  module: string | null;
  tier: string | null;
  status: SubmissionStatus;
  acceptedCount: number;
  failedCount: number;
  createdBy: string;
  requestId: string;
}

const SUBMISSION_COLUMNS = ["id", "tenant_id", "external_reference", "module", "tier", "item_count", "accepted_count", "failed_count", "status", "created_by", "created_at"];
const ITEM_COLUMNS = ["id", "submission_id", "document_id", "filename", "file_size", "mime_type", "item_metadata", "status", "error_message"];

function toSubmission(row: Omit<SubmissionRow, "created_at"> & { created_at: Date }): SubmissionRow {
  return { ...row, created_at: row.created_at.toISOString() };
}

export async function insertSubmission(db: Knex, submission: NewSubmission, items: NewItem[]): Promise<{ submission: SubmissionRow; items: ItemRow[] }> {
  const [row] = await db("integrator.intake_submissions")
    .insert({
      tenant_id: submission.tenantId,
      kind: submission.kind,
      external_reference: submission.externalReference,
      module: submission.module,
      tier: submission.tier,
      item_count: items.length,
      accepted_count: submission.acceptedCount,
      failed_count: submission.failedCount,
      status: submission.status,
      created_by: submission.createdBy,
      request_id: submission.requestId,
    })
    .returning(SUBMISSION_COLUMNS);
  const created = toSubmission(row);
  const itemRows: ItemRow[] = await db("integrator.intake_items")
    .insert(
      items.map((item, position) => ({
        tenant_id: submission.tenantId,
        submission_id: created.id,
        position,
        filename: item.filename,
        file_size: item.file_size,
        mime_type: item.mime_type,
        item_metadata: item.item_metadata === null ? null : JSON.stringify(item.item_metadata),
        status: item.status,
        error_message: item.error_message,
      })),
    )
    .returning(ITEM_COLUMNS);
  return { submission: created, items: itemRows };
}

export async function findSubmission(db: Knex, tenantId: string, submissionId: string): Promise<{ submission: SubmissionRow; items: ItemRow[] } | undefined> {
  const row = await db("integrator.intake_submissions").where({ tenant_id: tenantId, id: submissionId }).first(SUBMISSION_COLUMNS);
  if (!row) return undefined;
  const items: ItemRow[] = await db("integrator.intake_items").where({ tenant_id: tenantId, submission_id: submissionId }).orderBy("position").select(ITEM_COLUMNS);
  return { submission: toSubmission(row), items };
}

/** An item by id alone, for operator commands, locked for the update that follows. */
export async function lockItem(db: Knex, itemId: string): Promise<(ItemRow & { tenant_id: string }) | undefined> {
  return db("integrator.intake_items").where({ id: itemId }).forUpdate().first([...ITEM_COLUMNS, "tenant_id"]);
}

export async function updateItem(db: Knex, tenantId: string, itemId: string, changes: Partial<Pick<ItemRow, "document_id" | "status" | "error_message">>): Promise<ItemRow> {
  const [row] = await db("integrator.intake_items")
    .where({ tenant_id: tenantId, id: itemId })
    .update({ ...changes, updated_at: db.fn.now() })
    .returning(ITEM_COLUMNS);
  return row as ItemRow;
}

export async function itemStatuses(db: Knex, tenantId: string, submissionId: string): Promise<ItemStatus[]> {
  const rows: { status: ItemStatus }[] = await db("integrator.intake_items").where({ tenant_id: tenantId, submission_id: submissionId }).orderBy("position").select("status");
  return rows.map((row) => row.status);
}

export async function updateSubmissionTotals(
  db: Knex,
  tenantId: string,
  submissionId: string,
  totals: { status: SubmissionStatus; acceptedCount: number; failedCount: number },
): Promise<SubmissionRow> {
  const [row] = await db("integrator.intake_submissions")
    .where({ tenant_id: tenantId, id: submissionId })
    .update({ status: totals.status, accepted_count: totals.acceptedCount, failed_count: totals.failedCount, updated_at: db.fn.now() })
    .returning(SUBMISSION_COLUMNS);
  return toSubmission(row);
}
