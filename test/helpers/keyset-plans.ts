// The EXPLAIN check every newest-first list shares: each page query (one per filter) is an index range
// scan of the list's own indexes, without a sequential scan or a sort, whatever the tenant's row count.
import type { Test } from "tap";
import type { Knex } from "knex";

/** A keyset position well inside the seeded rows (microsecond text, as cursors hold it). */
export function pastKeyset(): { createdAt: string; id: string } {
  return { createdAt: new Date(Date.now() - 5000_000).toISOString().replace("Z", "000Z"), id: crypto.randomUUID() };
}

export async function assertIndexRangeScans(
  t: Test,
  db: Knex,
  indexPrefix: string,
  pages: Record<string, Knex.QueryBuilder>,
): Promise<void> {
  for (const [name, query] of Object.entries(pages)) {
    const { sql, bindings } = query.toSQL();
    const explained = await db.raw<{ rows: { "QUERY PLAN": string }[] }>(`explain ${sql}`, bindings as never);
    const plan = explained.rows.map((row) => row["QUERY PLAN"]).join("\n");
    t.match(plan, new RegExp(`Index Scan[^\\n]*${indexPrefix}`), `${name}: an index scan`);
    t.notMatch(plan, /Seq Scan|Sort/, `${name}: no sequential scan, no sort`);
  }
}
