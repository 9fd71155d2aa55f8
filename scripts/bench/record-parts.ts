// What one integrator.record_delivery_attempt costs, by outcome, and what an endpoint's health costs to read:
// medians of client-side timings (a round trip included; `select 1` gives its cost), each call inside a
// transaction rolled back, on a throwaway migrated database.
//   - a delivered attempt to a healthy subscription (the hot path: no write of the subscription row);
//   - a failed attempt with a retry left (the subscription's failure history written, the retry queued);
//   - a last failed attempt that disables the subscription and reports both operational events to one
//     other subscription naming them;
//   - the health of the 20 subscriptions of a list page, each with 100 attempts in the window, and of one
//     subscription among 100 000 attempt rows of the tenant.
// `--function FILE` first applies another text of record_delivery_attempt (the one of an earlier commit:
// `git show <commit>:db/functions/record_delivery_attempt.sql > FILE`) to compare the two on one machine.
// `node scripts/bench/record-parts.ts [--runs N] [--function FILE]`
import fs from "node:fs";
import { parseArgs } from "node:util";
import { migratedDatabase } from "./migrated-database.ts";
import { intakeEventData } from "../../test/helpers/webhooks.ts";
import { createDatabase } from "../../db/database.ts";
import { HEALTH_SAMPLE, HEALTH_WINDOW_HOURS, healthQuery, subscriptionsHealth } from "../../db/webhooks/health.ts";

const { values } = parseArgs({ options: { runs: { type: "string", default: "200" }, function: { type: "string" } } });
const runs = Number(values.runs);

const { client, url, close } = await migratedDatabase("integrator_record_parts");
try {
  if (values.function) await client.query(fs.readFileSync(values.function, "utf8"));
  const {
    rows: [tenant],
  } = await client.query<{ id: string }>("insert into integrator.tenants (name) values ('x') returning id");
  const tenantId = tenant?.id ?? "";
  const subscribe = async (url: string, events: string[]): Promise<string> => {
    const { rows } = await client.query<{ id: string }>(
      "insert into integrator.webhook_subscriptions (tenant_id, url, events, secret_encrypted, created_by) values ($1, $2, $3, 'x', 'e') returning id",
      [tenantId, url, events],
    );
    return rows[0]?.id ?? "";
  };
  const target = await subscribe("https://x.example.com/target", ["intake.submitted"]);
  await subscribe("https://x.example.com/watcher", ["webhook.endpoint_disabled", "webhook.delivery_exhausted"]);
  const data = JSON.stringify(intakeEventData());
  await client.query(
    "select integrator.emit_event($1, 'intake.submitted', $2::jsonb) from generate_series(1, $3::int)",
    [tenantId, data, runs],
  );
  const { rows: pending } = await client.query<{ id: string }>(
    "select id from integrator.webhook_deliveries where tenant_id = $1 and subscription_id = $2",
    [tenantId, target],
  );

  /** The median client-side time of one call per delivery, each in a transaction rolled back. */
  const medianMs = async (sql: string, params: (deliveryId: string) => unknown[]): Promise<number> => {
    const times: number[] = [];
    for (const { id } of pending) {
      await client.query("begin");
      const started = performance.now();
      await client.query(sql, params(id));
      times.push(performance.now() - started);
      await client.query("rollback");
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)] ?? Number.NaN;
  };
  const record = `select integrator.record_delivery_attempt($1, $2, 0, $3, now(), 40, $4, $5, $6, $7, $8, 5,
                    $9, '{"content-type":"application/json"}'::jsonb, '{"server":"x"}'::jsonb, '', false)`;
  const attempt = (status: string, code: number, retryAt: string | null, failedInARow: number) => (id: string) => [
    tenantId,
    id,
    status,
    code,
    status === "delivered" ? null : `HTTP status ${code}`,
    status === "delivered" ? null : "http_status",
    retryAt,
    failedInARow,
    status === "delivered" ? null : "The endpoint answered 503.",
  ];
  const line = (label: string, ms: number) =>
    console.log(`${label}: median ${ms.toFixed(3)} ms (${pending.length} runs)`);

  line("select 1", await medianMs("select 1", () => []));
  line("delivered, healthy subscription", await medianMs(record, attempt("delivered", 204, null, 20)));
  line(
    "failed, a retry left",
    await medianMs(record, attempt("pending", 503, new Date(Date.now() + 300_000).toISOString(), 20)),
  );
  line("failed, last: disables and reports twice", await medianMs(record, attempt("failed", 503, null, 1)));

  // Health: 20 subscriptions with HEALTH_SAMPLE attempts each in the window, beside 100 000 older rows of one.
  const [first] = pending;
  const listed: string[] = [];
  for (let n = 0; n < 20; n++) listed.push(await subscribe(`https://x.example.com/listed-${n}`, ["*"]));
  await client.query(
    `insert into integrator.webhook_delivery_attempts
            (tenant_id, delivery_id, subscription_id, number, attempted_at, duration_ms, outcome, response_code)
     select $1, $2, ($3::uuid[])[1 + (n % 20)], n + 1, now() - make_interval(secs => n), 10,
            case when n % 7 = 0 then 'failed' else 'delivered' end, 204
       from generate_series(1, 20 * $4::int) as n`,
    [tenantId, first?.id, listed, HEALTH_SAMPLE],
  );
  await client.query(
    `insert into integrator.webhook_delivery_attempts
            (tenant_id, delivery_id, subscription_id, number, attempted_at, duration_ms, outcome, response_code)
     select $1, $2, $3, 10000 + n, now() - make_interval(hours => $4::int) - make_interval(secs => n), 10, 'delivered', 204
       from generate_series(1, 100000) as n`,
    [tenantId, first?.id, listed[0], HEALTH_WINDOW_HOURS],
  );
  await client.query("analyze integrator.webhook_delivery_attempts");
  const db = createDatabase(url, 1);
  try {
    const healthMs = async (ids: string[]): Promise<number> => {
      const times: number[] = [];
      for (let run = 0; run < Math.min(runs, 100); run++) {
        const started = performance.now();
        await subscriptionsHealth(db, tenantId, ids);
        times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      return times[Math.floor(times.length / 2)] ?? Number.NaN;
    };
    const health = await healthMs(listed);
    console.log(`health of a list of 20, ${HEALTH_SAMPLE} attempts each: median ${health.toFixed(3)} ms`);
    const one = await healthMs(listed.slice(0, 1));
    console.log(`health of one beside 100 000 older attempts of its own: median ${one.toFixed(3)} ms`);
    const { sql, bindings } = healthQuery(db, tenantId, listed).toSQL();
    const plan = await db.raw<{ rows: { "QUERY PLAN": string }[] }>(`explain ${sql}`, bindings as never);
    console.log(plan.rows.map((row) => row["QUERY PLAN"]).join("\n"));
  } finally {
    await db.destroy();
  }
} finally {
  await close();
}
