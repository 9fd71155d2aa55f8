// Where one integrator.emit_event goes, part by part: each of its steps run alone (the data check, the
// tenant's backlog count, the delivery insert with its counting trigger, the job queued through
// queue_delivery_jobs, graphile-worker's add_job bare and with a key and flags), then emit_event whole,
// one matching subscription: medians of 40 client-side timings inside rolled-back transactions, a
// round trip included (`select 1` gives its cost). Then 2 000 deliveries emitted in one statement at
// fan-out 1 and at fan-out 100 against 2 000 add_job calls in one statement (medians of 3, rolled
// back). `node scripts/bench/emit-parts.ts`
import { randomUUID } from "node:crypto";
import { migratedDatabase } from "./migrated-database.ts";
import { intakeEventData } from "../../test/helpers/webhooks.ts";

const { client, close } = await migratedDatabase("integrator_emit_parts");
try {
  const {
    rows: [tenant],
  } = await client.query<{ id: string }>("insert into integrator.tenants (name) values ('x') returning id");
  const {
    rows: [sub],
  } = await client.query<{ id: string }>(
    "insert into integrator.webhook_subscriptions (tenant_id, url, events, secret_encrypted, created_by) values ($1, 'https://x.example.com/h', array['*'], 'x', 'e') returning id",
    [tenant?.id],
  );
  const data = JSON.stringify(intakeEventData());
  /** The median client-side time of `runs` runs of the statement, each in a transaction rolled back. */
  const medianMs = async (runs: number, sql: string, params: unknown[]): Promise<number> => {
    const xs: number[] = [];
    for (let i = 0; i < runs; i++) {
      await client.query("begin");
      const t0 = performance.now();
      await client.query(sql, params);
      xs.push(performance.now() - t0);
      await client.query("rollback");
    }
    xs.sort((a, b) => a - b);
    return xs[Math.floor(runs / 2)] ?? Number.NaN;
  };
  const time = async (label: string, sql: string, params: unknown[]) =>
    console.log(`${label}: median ${(await medianMs(40, sql, params)).toFixed(3)} ms (round trip included)`);
  await time("select 1", "select 1", []);
  await time("data check", "select integrator.webhook_event_data_problem('intake.submitted', $1::jsonb)", [data]);
  await time("backlog", "select integrator.delivery_backlog($1)", [tenant?.id]);
  await time(
    "insert delivery",
    "insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_id, event_type, payload) values ($1, $2, $4, 'intake.submitted', $3::jsonb)",
    [tenant?.id, sub?.id, data, randomUUID()],
  );
  await time(
    "insert event",
    "insert into integrator.webhook_events (tenant_id, event_type, payload) values ($1, 'intake.submitted', $2::jsonb)",
    [tenant?.id, data],
  );
  await time("queue job", "select integrator.queue_delivery_jobs($1, array[$2::uuid], 0)", [tenant?.id, randomUUID()]);
  await time("add_job plain", "select graphile_worker.add_job('deliver_webhook', '{}'::json)", []);
  await time(
    "add_job with key+flags",
    "select graphile_worker.add_job('deliver_webhook', '{}'::json, job_key => $1, flags => array['tenant:x'], priority => 3)",
    [randomUUID()],
  );
  await time("emit_event", "select integrator.emit_event($1, 'intake.submitted', $2::jsonb)", [tenant?.id, data]);

  const bulk = async (label: string, sql: string, params: unknown[]) =>
    console.log(`${label}: median ${(await medianMs(3, sql, params)).toFixed(0)} ms`);
  await bulk(
    "2000 x add_job, one statement",
    "select graphile_worker.add_job('bench_noop', '{}'::json) from generate_series(1, 2000)",
    [],
  );
  const emitMany = "select integrator.emit_event($1, 'intake.submitted', $2::jsonb) from generate_series(1, $3::int)";
  await bulk("2000 deliveries at fan-out 1 (2000 events), one statement", emitMany, [tenant?.id, data, 2000]);
  await client.query(
    `insert into integrator.webhook_subscriptions (tenant_id, url, events, secret_encrypted, created_by)
     select $1, 'https://x.example.com/h' || n, array['*'], 'x', 'e' from generate_series(1, 99) n`,
    [tenant?.id],
  );
  await bulk("2000 deliveries at fan-out 100 (20 events), one statement", emitMany, [tenant?.id, data, 20]);
} finally {
  await close();
}
