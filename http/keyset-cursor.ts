// The opaque cursor of the newest-first lists (deliveries, submissions): the keyset (created_at with
// microseconds, id) of a page's last row, as base64url JSON. Opaque to clients, so its form may change; one
// that does not decode to a keyset a list could have handed out is a 422 value_error at ["query", "cursor"].
import { isUuid } from "../db/ids.ts";
import { KEYSET_TIMESTAMP, type Keyset } from "../db/keyset.ts";
import { instantOf } from "../db/timestamps.ts";
import { RequestValidationError, valueError } from "./validation.ts";

export function encodeCursor(keyset: Keyset): string {
  return Buffer.from(JSON.stringify({ c: keyset.createdAt, i: keyset.id }), "utf8").toString("base64url");
}

export function decodeCursor(cursor: string): Keyset {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    decoded = undefined;
  }
  const candidate = decoded as { c?: unknown; i?: unknown } | undefined;
  if (
    typeof candidate !== "object" ||
    candidate === null ||
    typeof candidate.c !== "string" ||
    typeof candidate.i !== "string" ||
    !KEYSET_TIMESTAMP.test(candidate.c) ||
    // The form alone lets through days that do not exist (February 30, year 0000), which PostgreSQL refuses.
    instantOf(candidate.c) === undefined ||
    !isUuid(candidate.i)
  ) {
    throw new RequestValidationError([
      valueError(["query", "cursor"], "cursor is not a next_cursor of this list", cursor),
    ]);
  }
  return { createdAt: candidate.c, id: candidate.i };
}
