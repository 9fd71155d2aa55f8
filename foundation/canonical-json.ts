// Canonical JSON: keys sorted by code point at every depth, separators "," and ":" with no
// whitespace. With asciiOnly it is byte-for-byte Python's
// json.dumps(obj, sort_keys=True, separators=(",", ":")) (ensure_ascii=True) for strings,
// objects, arrays, booleans, null and integers; numbers are written as JSON.stringify writes them.
import { createHash } from "node:crypto";

export interface CanonicalJsonOptions {
  asciiOnly?: boolean;
}

// Python compares str keys by code point; JS's default sort compares UTF-16 code units, which
// differs once a key holds a character above U+FFFF (a surrogate sorts before U+E000–U+FFFF).
export function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i) ?? 0;
    const cb = b.codePointAt(j) ?? 0;
    if (ca !== cb) return ca - cb;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  return a.length - i - (b.length - j);
}

// Python's ensure_ascii escapes everything outside " "–"~" (so DEL, U+007F, too); JSON.stringify
// has already escaped the control characters, quotes, backslashes and lone surrogates.
function escapeNonAscii(json: string): string {
  return json.replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function quote(text: string, asciiOnly: boolean): string {
  const json = JSON.stringify(text);
  return asciiOnly ? escapeNonAscii(json) : json;
}

function fail(message: string): never {
  throw new TypeError(`canonicalJson: ${message}`);
}

function write(value: unknown, key: string, asciiOnly: boolean, ancestors: Set<object>): string | undefined {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(key);
  }
  if (value instanceof Number || value instanceof String || value instanceof Boolean) {
    value = value.valueOf();
  }
  switch (typeof value) {
    case "undefined":
      return undefined;
    case "string":
      return quote(value, asciiOnly);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) fail(`non-finite number ${String(value)} cannot be serialised`);
      return JSON.stringify(value);
    case "bigint":
      return fail("bigint cannot be serialised");
    case "function":
      return fail("a function cannot be serialised");
    case "symbol":
      return fail("a symbol cannot be serialised");
    case "object":
      break;
  }
  if (value === null) return "null";
  const object = value;
  if (ancestors.has(object)) fail("cyclic structure cannot be serialised");
  ancestors.add(object);
  try {
    if (Array.isArray(object)) {
      const items = (object as unknown[]).map(
        (item, index) => write(item, String(index), asciiOnly, ancestors) ?? "null",
      );
      return `[${items.join(",")}]`;
    }
    const record = object as Record<string, unknown>;
    const members: string[] = [];
    for (const name of Object.keys(record).sort(compareCodePoints)) {
      const written = write(record[name], name, asciiOnly, ancestors);
      if (written !== undefined) members.push(`${quote(name, asciiOnly)}:${written}`);
    }
    return `{${members.join(",")}}`;
  } finally {
    ancestors.delete(object);
  }
}

/**
 * Serialises `value` with sorted keys and compact separators. Undefined object properties are
 * omitted (undefined array items become null, as in JSON.stringify); toJSON is honoured.
 * Throws a TypeError on non-finite numbers, bigint, functions, symbols, cycles and a top-level
 * value that has no JSON form.
 */
export function canonicalJson(value: unknown, options?: CanonicalJsonOptions): string {
  const written = write(value, "", options?.asciiOnly === true, new Set());
  if (written === undefined) fail("value has no JSON representation");
  return written;
}

/**
 * The asciiOnly form of a canonical text written without it: outside strings canonical JSON is ASCII, so
 * escaping every other character of the whole text gives what canonicalJson(value, { asciiOnly: true })
 * gives, without walking and sorting the value a second time.
 */
export function asciiEscaped(canonical: string): string {
  return escapeNonAscii(canonical);
}

/** Hex SHA-256 of the UTF-8 canonical form (not ASCII-escaped); used for idempotency fingerprints. */
export function canonicalJsonHash(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value), "utf8").digest("hex");
}
