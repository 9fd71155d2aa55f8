// The status moves an operator (or the document pipeline) makes to an accepted item, each in one
// transaction with the submission's derived totals and the document.* events it causes.
import type { Knex } from "knex";
import type { Services } from "../../foundation/services.ts";
import { emitEvent } from "../../db/events.ts";
import { isUuid } from "../../db/ids.ts";
import {
  itemStatuses,
  lockItem,
  updateItem,
  updateSubmissionTotals,
  type ItemRow,
  type ItemStatus,
  type SubmissionRow,
} from "../../db/intake.ts";

import { ChangeRefused } from "../../foundation/refusals.ts";
import { aggregate } from "./submission-status.ts";

/** Item moves an operator (or the document pipeline) may make; rejected is final at intake. */
const ITEM_TRANSITIONS: Record<ItemStatus, ItemStatus[]> = {
  pending: ["uploaded", "processing", "failed"],
  uploaded: ["processing", "completed", "failed"],
  processing: ["completed", "failed"],
  failed: ["processing"],
  completed: [],
  rejected: [],
};

export interface ItemChange {
  item: ItemRow;
  previousStatus: ItemStatus;
  submission: SubmissionRow;
}

/** An item is addressed with its tenant (the primary key is (tenant_id, id)): another tenant's item does not exist. */
async function changeItem(
  services: Services,
  tenantId: string,
  itemId: string,
  decide: (item: ItemRow) => Partial<Pick<ItemRow, "document_id" | "status" | "error_message">>,
): Promise<ItemChange> {
  if (!isUuid(itemId)) throw new ChangeRefused("item_id", `item_id ${itemId} is not an item id`);
  return services.db.transaction(async (trx) => {
    const current = await lockItem(trx, tenantId, itemId.toLowerCase());
    if (!current) throw new ChangeRefused("item_id", `item ${itemId} does not exist in tenant ${tenantId}`);
    const item = await updateItem(trx, tenantId, current.id, decide(current));
    const totals = aggregate(await itemStatuses(trx, tenantId, current.submission_id));
    const submission = await updateSubmissionTotals(trx, tenantId, current.submission_id, totals);
    await emitDocumentEvents(trx, tenantId, item, current.status);
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
export function linkItem(
  services: Services,
  tenantId: string,
  itemId: string,
  documentId: string,
): Promise<ItemChange> {
  if (!isUuid(documentId)) throw new ChangeRefused("document_id", "document_id must be a document UUID");
  return changeItem(services, tenantId, itemId, (item) => {
    if (item.status === "rejected")
      throw new ChangeRefused("item_id", "a rejected item cannot be linked to a document");
    return {
      document_id: documentId.toLowerCase(),
      ...(item.status === "pending" ? { status: "uploaded" as const } : {}),
    };
  });
}

export function setItemStatus(
  services: Services,
  tenantId: string,
  itemId: string,
  status: string,
  errorMessage: string | undefined,
): Promise<ItemChange> {
  if (!(status in ITEM_TRANSITIONS) || status === "rejected") {
    throw new ChangeRefused(
      "status",
      `status must be one of ${Object.keys(ITEM_TRANSITIONS)
        .filter((s) => s !== "rejected")
        .join(", ")}`,
    );
  }
  const next = status as ItemStatus;
  return changeItem(services, tenantId, itemId, (item) => {
    if (!ITEM_TRANSITIONS[item.status].includes(next))
      throw new ChangeRefused("status", `an item cannot move from ${item.status} to ${next}`);
    return {
      status: next,
      error_message: next === "failed" ? (errorMessage ?? "processing failed").slice(0, 1000) : null,
    };
  });
}
