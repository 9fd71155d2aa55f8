// Server-side time of one intake write (single and batch of 100) against the floor's one-row insert,
// by EXPLAIN (ANALYZE) inside a rolled-back transaction, on a throwaway PostgreSQL: the planning and
// execution times and the per-trigger (foreign key) times. `node scripts/bench/explain-write.ts`
import { migratedDatabase } from "./migrated-database.ts";
import { uuidV7 } from "../../db/ids.ts";
import { intakeEventData } from "../../test/helpers/webhooks.ts";

const { client, close } = await migratedDatabase("integrator_explain");
try {
  await client.query(
    "create table bench_floor (id uuid primary key default gen_random_uuid(), body jsonb not null, created_at timestamptz not null default now())",
  );
  const {
    rows: [tenant],
  } = await client.query<{ id: string }>("insert into integrator.tenants (name) values ('explain') returning id");
  const items = (n: number) =>
    JSON.stringify(
      Array.from({ length: n }, (_, position) => ({
        id: uuidV7(),
        position,
        filename: `doc-${position}.pdf`,
        file_size: 1000,
        mime_type: "application/pdf",
        item_metadata: null,
        status: "pending",
        error_message: null,
      })),
    );
  const write = (n: number) =>
    [
      "select integrator.record_submission($1, $2, 'single', null, null, null, 'received', $3, 0, 'explain', 'r', now(), $4::jsonb, 'intake.submitted', 'explain', '{}'::jsonb)",
      [tenant?.id, uuidV7(), n, items(n)],
    ] as const;
  const measure = async (label: string, sql: string, params: readonly unknown[]) => {
    const figures: string[] = [];
    for (let i = 0; i < 30; i++) {
      await client.query("begin");
      const { rows } = await client.query<{
        "QUERY PLAN": {
          "Planning Time": number;
          "Execution Time": number;
          Triggers?: { "Trigger Name": string; Time: number; Calls: number }[];
        }[];
      }>(`explain (analyze, format json) ${sql}`, params as unknown[]);
      await client.query("rollback");
      const plan = rows[0]?.["QUERY PLAN"][0];
      if (i >= 10 && plan)
        figures.push(
          JSON.stringify({
            planning: plan["Planning Time"],
            execution: plan["Execution Time"],
            triggers: plan.Triggers?.map((t) => `${t["Trigger Name"]}: ${t.Time.toFixed(2)} ms / ${t.Calls}`),
          }),
        );
    }
    const parsed = figures.map((f) => JSON.parse(f) as { planning: number; execution: number; triggers?: string[] });
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
    process.stdout.write(
      `${label}: planning ${median(parsed.map((p) => p.planning)).toFixed(3)} ms, execution ${median(parsed.map((p) => p.execution)).toFixed(3)} ms (medians of 20)${parsed[0]?.triggers?.length ? `; e.g. ${parsed[0].triggers.join(", ")}` : ""}\n`,
    );
  };
  await measure("floor insert", "insert into bench_floor (body) values ($1) returning id, created_at", [
    JSON.stringify({ filename: "contract.pdf", file_size: 48213 }),
  ]);
  const [single, singleParams] = write(1);
  await measure("record_submission, 1 item, no subscription", single, singleParams);
  const [batch, batchParams] = write(100);
  await measure("record_submission, 100 items, no subscription", batch, batchParams);
  await client.query(
    "insert into integrator.webhook_subscriptions (tenant_id, url, events, secret_encrypted, created_by) values ($1, 'https://x.example.com/h', array['*'], 'x', 'explain')",
    [tenant?.id],
  );
  const [single2, single2Params] = write(1);
  await measure("record_submission, 1 item, one matching subscription", single2, single2Params);
  await measure(
    "emit_event alone, one matching subscription",
    "select integrator.emit_event($1, 'intake.submitted', $2::jsonb)",
    [tenant?.id, JSON.stringify(intakeEventData())],
  );
} finally {
  await close();
}
