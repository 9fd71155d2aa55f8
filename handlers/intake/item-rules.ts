// The item rules checked after the schema (docs/decisions.md §4): item_metadata's size and depth
// limits (a 422 for the whole request) and the service rules that reject one item only.
import type { components } from "../../generated/openapi.ts";
import type { Config } from "../../foundation/config.ts";
import { valueError, type ValidationIssue } from "../../http/validation.ts";
import { depthOf } from "../../foundation/json-limits.ts";

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
  // Cut at the first ";" without split: split's array and pieces were a visible share of a batch's
  // allocation. trim and toLowerCase return a clean type as is.
  const end = mimeType.indexOf(";");
  return (end === -1 ? mimeType : mimeType.slice(0, end)).trim().toLowerCase();
}

/** What is stored as an item's filename: its NFC form, so that one name has one spelling (NFD "e\u0301" is "é"). */
export function storedFilename(filename: string): string {
  return filename.normalize("NFC");
}

// Control characters (Cc), and the invisible characters that change how a name reads: Unicode format
// characters (Cf: bidi controls such as U+202E make "invoice\u202efdp.exe" display as "invoiceexe.pdf",
// zero-width characters) and the line and paragraph separators (Zl U+2028, Zp U+2029).
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

// Slashes, and characters that look like one: those NFKC maps to "/" or "\" (fullwidth U+FF0F, U+FF3C,
// small U+FE68) and the look-alikes it leaves alone (fraction and division slashes, set minus, the big and
// box-drawing diagonals).
const SEPARATOR_LOOK_ALIKE = /[/\\\u2044\u2215\u2216\u2571\u2572\u27cb\u27cd\u29f5\u29f8\u29f9]/u;

// Characters that render as nothing or as blank space without being a space: the default-ignorable code
// points (Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the combining grapheme joiner, variation
// selectors) and the braille blank U+2800.
const FILLER = /[\p{Default_Ignorable_Code_Point}\u2800]/u;

// Spaces that pad: at either end (trimmed away or unseen), before a dot ("invoice.pdf   .exe" shows as
// "invoice.pdf" where the name is cut), or three or more in a row. \s covers no-break and ideographic spaces.
const PADDING = /^\s|\s$|\s\.|\s{3}/u;

/** More combining marks on one character than any script needs (Tibetan stacks reach four): Zalgo text. */
const MAX_COMBINING_MARKS = 4;
const STACKED_MARKS = new RegExp(`\\p{M}{${MAX_COMBINING_MARKS + 1}}`, "u");

// Nothing but spaces and what renders as nothing: a blank name.
const BLANK = /^[\s\p{Default_Ignorable_Code_Point}\u2800]*$/u;
const PATH_SEPARATOR = /[/\\]/;
const DOTS_ONLY = /^\.+$/;

// Windows opens `name:stream` as an alternate data stream of `name` (NTFS): `invoice.pdf:evil.exe` is a
// hidden executable beside an innocent-looking file. Checked in NFKC too (fullwidth U+FF1A, small U+FE55).
const COLON = ":";

// Windows device names: a file called so, in any case and whatever its extension (`CON.pdf`, `nul.tar.gz`),
// is the device, not a file.
const DEVICE_NAME =
  /^(?:CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3]|CONIN\$|CONOUT\$)(?:\.|$)/i;

/**
 * Why a filename is refused, or undefined, given its stored (NFC) form. The patterns are constants: a
 * regular expression literal in here is a new object on every call, for every item of a batch.
 */
function filenameRejection(name: string): string | undefined {
  // The compatibility form folds look-alikes (fullwidth, small) into the ASCII characters they imitate.
  const folded = name.normalize("NFKC");
  if (SEPARATOR_LOOK_ALIKE.test(name) || PATH_SEPARATOR.test(folded))
    return "filename must not contain a path separator or a character that looks like one";
  if (INVISIBLE.test(name))
    return "filename must not contain control characters, Unicode format characters (such as bidi controls) or line separators";
  if (BLANK.test(name)) return "filename must not be blank";
  if (FILLER.test(name))
    return "filename must not contain invisible fillers (such as U+3164 or U+2800) or other default-ignorable characters";
  if (PADDING.test(name))
    return "filename must not begin or end with a space, or pad with spaces (before a dot, or three in a row)";
  if (DOTS_ONLY.test(name)) return "filename must not consist of dots only";
  if (name.endsWith(".")) return "filename must not end with a dot";
  if (STACKED_MARKS.test(name))
    return `filename must not stack more than ${MAX_COMBINING_MARKS} combining marks on one character`;
  if (folded.includes(COLON))
    return "filename must not contain a colon (on Windows, invoice.pdf:evil.exe names an alternate data stream)";
  if (DEVICE_NAME.test(name))
    return "filename must not be a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9), with or without an extension";
  return undefined;
}

/** An item's checked fields as they are stored: filename by storedFilename, mime_type by storedMediaType. */
export interface StoredItemFields {
  filename: string;
  file_size: number;
  mime_type: string;
}

/**
 * The rules checked after the schema; each rejects its item only. Returns why, or undefined. They judge
 * what is stored, so the caller makes the stored forms once for both.
 */
export function itemRejection(item: StoredItemFields, intake: Config["intake"]): string | undefined {
  if (!MEDIA_TYPE.test(item.mime_type)) return "mime_type must be a media type such as application/pdf";
  if (!intake.allowedMimeTypes.includes(item.mime_type)) return `mime_type ${item.mime_type} is not accepted`;
  if (item.file_size > intake.maxFileSizeBytes)
    return `file_size exceeds the maximum of ${intake.maxFileSizeBytes} bytes`;
  return filenameRejection(item.filename);
}
