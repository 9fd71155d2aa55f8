// A submission's status and counts are derived from its items' statuses, never stored independently.
import { type ItemStatus, type SubmissionStatus } from "../../db/intake.ts";

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
