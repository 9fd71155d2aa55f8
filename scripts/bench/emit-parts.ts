// Where one integrator.emit_event goes, part by part: each of its steps run alone (the data check, the
// tenant's backlog count, the delivery insert with its counting trigger, the job queued through
// queue_delivery_job, graphile-worker's add_job bare and with a key and flags), then emit_event whole,
// one matching subscription. Medians of 40 client-side timings inside rolled-back transactions, a
// round trip included (`select 1` gives its cost). `node scripts/bench/emit-parts.ts`
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
  const time = async (label: string, sql: string, params: unknown[]) => {
    const xs: number[] = [];
    for (let i = 0; i < 40; i++) {
      await client.query("begin");
      const t0 = performance.now();
      await client.query(sql, params);
      xs.push(performance.now() - t0);
      await client.query("rollback");
    }
    xs.sort((a, b) => a - b);
    console.log(`${label}: median ${xs[20]?.toFixed(3)} ms (round trip included)`);
  };
  await time("select 1", "select 1", []);
  await time("data check", "select integrator.webhook_event_data_problem('intake.submitted', $1::jsonb)", [data]);
  await time("backlog", "select integrator.delivery_backlog($1)", [tenant?.id]);
  await time(
    "insert delivery",
    "insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload) values ($1, $2, 'intake.submitted', $3::jsonb)",
    [tenant?.id, sub?.id, data],
  );
  await time("queue job", "select integrator.queue_delivery_job($1, $2::uuid, 0, job_key => $3)", [
    tenant?.id,
    randomUUID(),
    randomUUID(),
  ]);
  await time("add_job plain", "select graphile_worker.add_job('deliver_webhook', '{}'::json)", []);
  await time(
    "add_job with key+flags",
    "select graphile_worker.add_job('deliver_webhook', '{}'::json, job_key => $1, flags => array['tenant:x'], priority => 3)",
    [randomUUID()],
  );
  await time("emit_event", "select integrator.emit_event($1, 'intake.submitted', $2::jsonb)", [tenant?.id, data]);
} finally {
  await close();
}
