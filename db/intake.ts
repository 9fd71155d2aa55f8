// Queries of intake submissions and items. Every query is led by tenant_id (the primary keys').
import type { Knex } from "knex";
import type { components } from "../generated/openapi.ts";
import { uuidV7 } from "./ids.ts";
import { rfc3339 } from "./timestamps.ts";
import { KEYED_WRITE_PARAMETERS, keyedWriteArguments, type KeyedOutcome, type KeyedWrite } from "./idempotency.ts";
import { newestFirstPage, pageOf, type Keyset, type KeysetPageRequest } from "./keyset.ts";
import { runPreparedWithTrace, WITH_TRACE_CONTEXT, type TraceContext } from "./trace-context.ts";

// Rows are read in exactly the shapes the contract answers with.
export type ItemStatus = components["schemas"]["IntakeItemStatus"];
export type SubmissionStatus = components["schemas"]["IntakeSubmissionStatus"];
export type SubmissionRow = components["schemas"]["IntakeSubmissionResponse"];
export type ItemRow = components["schemas"]["IntakeItemResponse"];
export type NewItem = Omit<ItemRow, "id" | "submission_id" | "document_id">;

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

const SUBMISSION_COLUMNS = [
  "id",
  "tenant_id",
  "external_reference",
  "module",
  "tier",
  "item_count",
  "accepted_count",
  "failed_count",
  "status",
  "created_by",
  "created_at",
];
const ITEM_COLUMNS = [
  "id",
  "submission_id",
  "document_id",
  "filename",
  "file_size",
  "mime_type",
  "item_metadata",
  "status",
  "error_message",
];

/** A submission row as pg returns it: created_at is a Date. */
type StoredSubmission = Omit<SubmissionRow, "created_at"> & { created_at: Date };

function toSubmission(row: StoredSubmission): SubmissionRow {
  return { ...row, created_at: rfc3339(row.created_at) };
}

export interface SubmissionAudit {
  action: string;
  actor: string;
  requestId: string;
  details: Record<string, unknown>;
}

/**
 * The arguments of integrator.record_submission, in its order. Ids (UUIDv7) and created_at are made here,
 * at one instant, so this module alone writes the 201 body.
 */
function recordSubmissionArguments(
  id: string,
  createdAt: Date,
  submission: NewSubmission,
  items: NewItem[],
  audit: SubmissionAudit,
) {
  const itemRecords = items.map((item, position) => ({ ...item, position, id: uuidV7(createdAt.getTime()) }));
  return [
    submission.tenantId,
    id,
    submission.kind,
    submission.externalReference,
    submission.module,
    submission.tier,
    submission.status,
    submission.acceptedCount,
    submission.failedCount,
    submission.createdBy,
    submission.requestId,
    createdAt,
    JSON.stringify(itemRecords),
    audit.action,
    audit.actor,
    JSON.stringify(audit.details),
  ];
}
const RECORD_SUBMISSION_PARAMETERS = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::timestamptz, ?::jsonb, ?, ?, ?::jsonb";
const RECORD_SUBMISSION = `select integrator.record_submission(${RECORD_SUBMISSION_PARAMETERS})`;
const RECORD_SUBMISSION_ONCE = `select * from integrator.record_submission_once(${KEYED_WRITE_PARAMETERS}, ?, ${RECORD_SUBMISSION_PARAMETERS})`;
// The same statements handing a trace context to the event's jobs (db/trace-context.ts). The keyed one's
// row is taken apart from a stored composite, so the function runs once.
const RECORD_SUBMISSION_TRACED = `${WITH_TRACE_CONTEXT} select integrator.record_submission(${RECORD_SUBMISSION_PARAMETERS}) from trace_context`;
const RECORD_SUBMISSION_ONCE_TRACED = `${WITH_TRACE_CONTEXT}, written as materialized (select integrator.record_submission_once(${KEYED_WRITE_PARAMETERS}, ?, ${RECORD_SUBMISSION_PARAMETERS}) as outcome_row from trace_context) select (outcome_row).* from written`;

/**
 * Writes the submission, its items and its audit action, and fans the submission's event (kind
 * `audit.action`: intake.submitted or intake.batch_submitted) out to the tenant's matching webhook
 * subscriptions through integrator.emit_event, in ONE statement (integrator.record_submission,
 * db/functions/record_submission.sql): one round trip, atomic even outside a transaction. With `trace`, the
 * event's jobs carry it.
 */
export async function insertSubmissionWithEvent(
  db: Knex,
  submission: NewSubmission,
  items: NewItem[],
  audit: SubmissionAudit,
  trace?: TraceContext,
): Promise<SubmissionRow> {
  const createdAt = new Date();
  const id = uuidV7(createdAt.getTime());
  await runPreparedWithTrace(
    db,
    trace,
    "record_submission",
    { sql: RECORD_SUBMISSION, tracedSql: RECORD_SUBMISSION_TRACED },
    recordSubmissionArguments(id, createdAt, submission, items, audit),
  );
  return newSubmissionRow(id, submission, items.length, rfc3339(createdAt));
}

/**
 * The same write under an Idempotency-Key, in ONE statement (integrator.record_submission_once,
 * db/functions/record_submission_once.sql): the key's advisory lock, the look-up of its remembered response
 * and, when there is none, the write and the remembered response. `written` and `remembered` carry the
 * response body exactly as it is (and was) sent; `in_progress` says another call holds the key. With `trace`,
 * the event's jobs carry it.
 */
export async function insertSubmissionOnce(
  db: Knex,
  key: KeyedWrite,
  submission: NewSubmission,
  items: NewItem[],
  audit: SubmissionAudit,
  trace?: TraceContext,
): Promise<KeyedOutcome> {
  const createdAt = new Date();
  const id = uuidV7(createdAt.getTime());
  const response = JSON.stringify(newSubmissionRow(id, submission, items.length, rfc3339(createdAt)));
  const { rows } = await runPreparedWithTrace<KeyedOutcome>(
    db,
    trace,
    "record_submission_once",
    { sql: RECORD_SUBMISSION_ONCE, tracedSql: RECORD_SUBMISSION_ONCE_TRACED },
    [...keyedWriteArguments(key), response, ...recordSubmissionArguments(id, createdAt, submission, items, audit)],
  );
  return rows[0] as KeyedOutcome;
}

/** A submission just written, as a row read back would be: the same members in the same order (SUBMISSION_COLUMNS). */
function newSubmissionRow(id: string, submission: NewSubmission, itemCount: number, createdAt: string): SubmissionRow {
  return {
    id,
    tenant_id: submission.tenantId,
    external_reference: submission.externalReference,
    module: submission.module,
    tier: submission.tier,
    item_count: itemCount,
    accepted_count: submission.acceptedCount,
    failed_count: submission.failedCount,
    status: submission.status,
    created_by: submission.createdBy,
    created_at: createdAt,
  };
}

export async function findSubmission(
  db: Knex,
  tenantId: string,
  submissionId: string,
): Promise<{ submission: SubmissionRow; items: ItemRow[] } | undefined> {
  const row = (await db("integrator.intake_submissions")
    .where({ tenant_id: tenantId, id: submissionId })
    .first(SUBMISSION_COLUMNS)) as StoredSubmission | undefined;
  if (!row) return undefined;
  const items: ItemRow[] = await db("integrator.intake_items")
    .where({ tenant_id: tenantId, submission_id: submissionId })
    .orderBy("position")
    .select(ITEM_COLUMNS);
  return { submission: toSubmission(row), items };
}

export interface SubmissionPageRequest extends KeysetPageRequest {
  status?: SubmissionStatus;
  externalReference?: string;
}

/**
 * The page query of the tenant's submissions: each filter is one range scan of an index leading with
 * tenant_id (intake_submissions_newest, _by_status, _by_external_reference). Exported for the EXPLAIN test.
 */
export function submissionsPageQuery(db: Knex, tenantId: string, page: SubmissionPageRequest): Knex.QueryBuilder {
  const query = db("integrator.intake_submissions").where({ tenant_id: tenantId });
  if (page.status !== undefined) query.andWhere({ status: page.status });
  if (page.externalReference !== undefined) query.andWhere({ external_reference: page.externalReference });
  return newestFirstPage(db, query, page, SUBMISSION_COLUMNS);
}

/** A page of the tenant's submissions, newest first, and the keyset of the next page (or null). */
export async function listSubmissions(
  db: Knex,
  tenantId: string,
  page: SubmissionPageRequest,
): Promise<{ submissions: SubmissionRow[]; next: Keyset | null }> {
  const rows = (await submissionsPageQuery(db, tenantId, page)) as (StoredSubmission & {
    created_at_key: string;
  })[];
  const { shown, next } = pageOf(rows, page.limit);
  return { submissions: shown.map(({ created_at_key: _key, ...row }) => toSubmission(row)), next };
}

/** The tenant's item, for operator commands, locked for the update that follows (its primary key). */
export async function lockItem(db: Knex, tenantId: string, itemId: string): Promise<ItemRow | undefined> {
  return db("integrator.intake_items").where({ tenant_id: tenantId, id: itemId }).forUpdate().first(ITEM_COLUMNS);
}

export async function updateItem(
  db: Knex,
  tenantId: string,
  itemId: string,
  changes: Partial<Pick<ItemRow, "document_id" | "status" | "error_message">>,
): Promise<ItemRow> {
  const [row] = (await db("integrator.intake_items")
    .where({ tenant_id: tenantId, id: itemId })
    .update({ ...changes, updated_at: db.fn.now() })
    .returning(ITEM_COLUMNS)) as ItemRow[];
  return row as ItemRow;
}

export async function itemStatuses(db: Knex, tenantId: string, submissionId: string): Promise<ItemStatus[]> {
  const rows: { status: ItemStatus }[] = await db("integrator.intake_items")
    .where({ tenant_id: tenantId, submission_id: submissionId })
    .orderBy("position")
    .select("status");
  return rows.map((row) => row.status);
}

export async function updateSubmissionTotals(
  db: Knex,
  tenantId: string,
  submissionId: string,
  totals: { status: SubmissionStatus; acceptedCount: number; failedCount: number },
): Promise<SubmissionRow> {
  const [row] = (await db("integrator.intake_submissions")
    .where({ tenant_id: tenantId, id: submissionId })
    .update({
      status: totals.status,
      accepted_count: totals.acceptedCount,
      failed_count: totals.failedCount,
      updated_at: db.fn.now(),
    })
    .returning(SUBMISSION_COLUMNS)) as StoredSubmission[];
  return toSubmission(row as StoredSubmission);
}
