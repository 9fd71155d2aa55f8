// The connections a benchmark's processes hold on PostgreSQL, by application_name (the API's pool is
// integrator-api, the worker's graphile-worker pool integrator-worker, a benchmark's own pools their names):
// pg_stat_activity sampled every SAMPLE_MS from a connection of its own (not counted), the most seen at
// once kept per name, open and running a statement. Opt-in (--db-connections): its queries are PostgreSQL work
// the CPU figures would otherwise count. docs/operating.md, capacity model, reads its table.
import pg from "pg";

const SAMPLE_MS = 100;

interface Peak {
  open: number;
  active: number;
}

export interface ConnectionSampler {
  /** The peaks by application_name, as a markdown table. */
  table(): string[];
  close(): Promise<void>;
}

export async function sampleConnections(url: string): Promise<ConnectionSampler> {
  const client = new pg.Client({ connectionString: url, application_name: "bench-connection-sampler" });
  await client.connect();
  const peaks = new Map<string, Peak>();
  let samples = 0;
  const sample = async () => {
    const { rows } = await client.query<{ name: string; open: number; active: number }>(
      `select coalesce(nullif(application_name, ''), '(unnamed)') as name, count(*)::int as open,
              (count(*) filter (where state <> 'idle'))::int as active
         from pg_stat_activity
        where backend_type = 'client backend' and pid <> pg_backend_pid()
        group by 1`,
    );
    samples++;
    for (const row of rows) {
      const peak = peaks.get(row.name) ?? { open: 0, active: 0 };
      peaks.set(row.name, { open: Math.max(peak.open, row.open), active: Math.max(peak.active, row.active) });
    }
  };
  let sampling = Promise.resolve();
  const timer = setInterval(() => {
    sampling = sampling.then(sample).catch(() => undefined);
  }, SAMPLE_MS);
  timer.unref();
  return {
    table() {
      return [
        `Connections to PostgreSQL by application_name, the most seen at once over the run (${samples} samples, every ${SAMPLE_MS} ms): open, and running a statement (state not idle).`,
        "",
        "| application_name | open, peak | active, peak |",
        "|---|---:|---:|",
        ...[...peaks.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, peak]) => `| ${name} | ${peak.open} | ${peak.active} |`),
      ];
    },
    async close() {
      clearInterval(timer);
      await sampling;
      await client.end();
    },
  };
}
