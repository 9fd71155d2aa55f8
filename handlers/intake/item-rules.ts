// The item rules checked after the schema (contract decisions §4): item_metadata's size and depth
// limits (a 422 for the whole request) and the service rules that reject one item only.
import type { Config } from "../../server/config.ts";
import { valueError, type ValidationIssue } from "../../server/http/validation.ts";
import { depthOf } from "../../server/json-limits.ts";

export const METADATA_MAX_BYTES = 16 * 1024;
export const METADATA_MAX_DEPTH = 5;

export interface IntakeItemInput {
  filename: string;
  file_size: number;
  mime_type: string;
  item_metadata?: Record<string, unknown> | null;
}

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
