// The item rules checked after the schema (docs/decisions.md §4): item_metadata's size and depth
// limits (a 422 for the whole request) and the service rules that reject one item only.
import type { components } from "../../generated/openapi.ts";
import type { Config } from "../../server/config.ts";
import { valueError, type ValidationIssue } from "../../http/validation.ts";
import { depthOf } from "../../server/json-limits.ts";

export const METADATA_MAX_BYTES = 16 * 1024;
export const METADATA_MAX_DEPTH = 5;

/** One item as the document declares it: the body of submitIntake, or an item of submitIntakeBatch. */
export type IntakeItemInput = components["schemas"]["IntakeSubmitRequest"] | components["schemas"]["IntakeBatchItem"];

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

// RFC 6838 restricted names: type "/" subtype, each 1-127 of these characters, compared without case.
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/**
 * What is stored as an item's mime_type: the media type alone, trimmed and lower-cased. Parameters
 * (`; charset=...`) are dropped: the service validates only the media type, and keeps nothing unchecked.
 */
export function storedMediaType(mimeType: string): string {
  return (mimeType.split(";")[0] ?? "").trim().toLowerCase();
}

// Control characters (Cc), and the invisible characters that change how a name reads: Unicode format
// characters (Cf: bidi controls such as U+202E make "invoice\u202efdp.exe" display as "invoiceexe.pdf",
// zero-width characters) and the line and paragraph separators (Zl U+2028, Zp U+2029).
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** The rules checked after the schema; each rejects its item only. Returns why, or undefined. */
export function itemRejection(item: IntakeItemInput, intake: Config["intake"]): string | undefined {
  const mediaType = storedMediaType(item.mime_type);
  if (!MEDIA_TYPE.test(mediaType)) return "mime_type must be a media type such as application/pdf";
  if (!intake.allowedMimeTypes.includes(mediaType)) return `mime_type ${mediaType} is not accepted`;
  if (item.file_size > intake.maxFileSizeBytes)
    return `file_size exceeds the maximum of ${intake.maxFileSizeBytes} bytes`;
  if (/[/\\]/.test(item.filename)) return "filename must not contain a path separator";
  if (INVISIBLE.test(item.filename))
    return "filename must not contain control characters, Unicode format characters (such as bidi controls) or line separators";
  if (/^\.+$/.test(item.filename)) return "filename must not consist of dots only";
  return undefined;
}
