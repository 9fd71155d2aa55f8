// Newest-first keyset pages (created_at descending, then id descending) for the lists the API offers: a
// page is one range scan of an index leading with (tenant_id[, filter], created_at desc, id desc), so
// its cost does not depend on how many rows the tenant has, and rows written meanwhile never shift a page.
import type { Knex } from "knex";
import { instantOf } from "./timestamps.ts";

/** A position in the newest-first order: the created_at (microseconds, as text) and id of a page's last row. */
export interface Keyset {
  createdAt: string;
  id: string;
}

/** created_at as a keyset holds it: microseconds, UTC. */
export const KEYSET_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export interface KeysetPageRequest {
  limit: number;
  after?: Keyset;
  /** Exclusive bounds, RFC 3339 date-times that name an instant (instantOf), at the millisecond precision the API shows. */
  createdAfter?: string;
  createdBefore?: string;
}

/**
 * The page on a query already narrowed to the tenant and its filters: the creation range, the rows after
 * the keyset, newest first, one more row than the limit (to tell whether a next page exists) and each
 * row's keyset text (`created_at_key`).
 */
export function newestFirstPage(
  db: Knex,
  query: Knex.QueryBuilder,
  page: KeysetPageRequest,
  columns: readonly string[],
): Knex.QueryBuilder {
  // created_at is stored to the microsecond; the bounds are plain ranges on it so the index serves them.
  if (page.createdAfter !== undefined)
    query.andWhereRaw("created_at >= date_trunc('milliseconds', ?::timestamptz) + interval '1 millisecond'", [
      boundOf(page.createdAfter),
    ]);
  if (page.createdBefore !== undefined)
    query.andWhereRaw("created_at < date_trunc('milliseconds', ?::timestamptz + interval '999 microseconds')", [
      boundOf(page.createdBefore),
    ]);
  if (page.after !== undefined)
    query.andWhereRaw("(created_at, id) < (?::timestamptz, ?::uuid)", [page.after.createdAt, page.after.id]);
  return query
    .orderBy([
      { column: "created_at", order: "desc" },
      { column: "id", order: "desc" },
    ])
    .limit(page.limit + 1)
    .select([
      ...columns,
      db.raw(`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_key`),
    ]);
}

/** A bound as PostgreSQL takes it (in UTC: it refuses offsets past ±15:59, which RFC 3339 allows). */
function boundOf(dateTime: string): string {
  const instant = instantOf(dateTime);
  // The request's date-time parameters were checked before the operation ran (http/declared-input.ts).
  if (instant === undefined) throw new Error(`not an instant: ${JSON.stringify(dateTime.slice(0, 40))}`);
  return instant;
}

/** The rows a page shows and the keyset of the next page (null on the last one). */
export function pageOf<Row extends { id: string; created_at_key: string }>(
  rows: Row[],
  limit: number,
): { shown: Row[]; next: Keyset | null } {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return { shown, next: rows.length > limit && last ? { createdAt: last.created_at_key, id: last.id } : null };
}
