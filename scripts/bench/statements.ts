// PostgreSQL's side of a benchmark, statement by statement: what one operation of chosen stretches (the
// service's segments, not the floor's that alternate with them) spent in each statement, the statements
// run inside functions included. The PostgreSQL counterpart of scripts/bench/profile.ts, read from
// pg_stat_statements: its counters are taken before and after each stretch and the differences added up
// per label, so the floor's statements and the set-up's never count.
import pg from "pg";

/** What the server needs preloaded (startEmbeddedPostgres's `settings`): every nested statement, with its planning. */
export const STATEMENT_SETTINGS = {
  shared_preload_libraries: "pg_stat_statements",
  "pg_stat_statements.track": "all",
  "pg_stat_statements.track_planning": "on",
};

interface Counters {
  calls: number;
  execMs: number;
  planMs: number;
}
interface Entry extends Counters {
  query: string;
  toplevel: boolean;
}
type Snapshot = Map<string, Entry>;

export interface StatementProfile {
  /** The counters now, to pass to `add` after a stretch. */
  mark(): Promise<Snapshot>;
  /** Adds what happened since `since` under `label`, as the cost of `operations` operations. */
  add(label: string, since: Snapshot, operations: number): Promise<void>;
  /** The label's statements by execution time per operation, the `top` costliest, as a markdown table. */
  table(label: string, top?: number): string[];
  close(): Promise<void>;
}

/** Connects to `url`'s database (the one the benchmark's statements run in) and installs the extension there. */
export async function statementProfile(url: string): Promise<StatementProfile> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("create extension if not exists pg_stat_statements");
  const totals = new Map<string, { entries: Map<string, Entry>; operations: number }>();
  const snapshot = async (): Promise<Snapshot> => {
    const { rows } = await client.query<{
      key: string;
      calls: string;
      exec_ms: number;
      plan_ms: number;
      query: string;
      toplevel: boolean;
    }>(
      `select queryid::text || ':' || toplevel::text as key, calls, total_exec_time as exec_ms,
              total_plan_time as plan_ms, query, toplevel
         from pg_stat_statements
        where dbid = (select oid from pg_database where datname = current_database()) and query not like '%pg_stat_statements%'`,
    );
    return new Map(
      rows.map((row) => [
        row.key,
        {
          calls: Number(row.calls),
          execMs: row.exec_ms,
          planMs: row.plan_ms,
          query: row.query,
          toplevel: row.toplevel,
        },
      ]),
    );
  };
  return {
    mark: snapshot,
    async add(label, since, operations) {
      const now = await snapshot();
      const total = totals.get(label) ?? { entries: new Map<string, Entry>(), operations: 0 };
      totals.set(label, total);
      total.operations += operations;
      for (const [key, entry] of now) {
        const before = since.get(key) ?? { calls: 0, execMs: 0, planMs: 0 };
        if (entry.calls === before.calls) continue;
        const sum = total.entries.get(key) ?? { ...entry, calls: 0, execMs: 0, planMs: 0 };
        sum.calls += entry.calls - before.calls;
        sum.execMs += entry.execMs - before.execMs;
        sum.planMs += entry.planMs - before.planMs;
        total.entries.set(key, sum);
      }
    },
    table(label, top = 15) {
      const total = totals.get(label);
      if (!total || total.operations === 0) return [];
      const per = (value: number) => (value / total.operations).toFixed(3);
      const entries = [...total.entries.values()].sort((a, b) => b.execMs - a.execMs);
      const text = (query: string) => query.replace(/\s+/g, " ").slice(0, 110).replace(/\|/g, "\\|");
      return [
        `PostgreSQL per operation, ${label} (pg_stat_statements over the service's segments, ${total.operations} operations). Times are elapsed inside the server, waits for a CPU or a lock included; a nested statement's time is also in its caller's.`,
        "",
        "| calls | exec ms | plan ms | | statement |",
        "|---:|---:|---:|---|---|",
        ...entries
          .slice(0, top)
          .map(
            (entry) =>
              `| ${per(entry.calls)} | ${per(entry.execMs)} | ${per(entry.planMs)} | ${entry.toplevel ? "top" : "nested"} | \`${text(entry.query)}\` |`,
          ),
      ];
    },
    close: () => client.end(),
  };
}
