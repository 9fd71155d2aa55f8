// What reading deliveries to send costs (integrator.deliveries_to_attempt, db/webhooks/sending.ts
// findDeliveriesToSend): an event's 100 deliveries, the 5 of jobs that start together, and one, each read
// through findDeliveriesToSend as the worker reads them; medians of client-side timings (a round trip and pg's
// parsing of the rows included), on a throwaway migrated database with one tenant's 100 subscriptions and
// 60 events' deliveries, analyzed. `--function FILE` applies another text of the function (the one of an
// earlier commit: `git show <commit>:db/functions/deliveries_to_attempt.sql > FILE`) and the two are timed
// in turn, round by round, on new connections.
// `node scripts/bench/read-parts.ts [--rounds N] [--function FILE]`
import fs from "node:fs";
import { parseArgs } from "node:util";
import { createDatabase } from "../../db/database.ts";
import { findDeliveriesToSend } from "../../db/webhooks/sending.ts";
import { migratedDatabase } from "./migrated-database.ts";
import { intakeEventData } from "../../test/helpers/webhooks.ts";
import { median } from "./common.ts";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "3" }, function: { type: "string" } } });
const rounds = Number(values.rounds);
const SIZES = [100, 5, 1];

const { client, url, close } = await migratedDatabase("integrator_read_parts");
try {
  const current = (
    await client.query<{ definition: string }>(
      "select pg_get_functiondef('integrator.deliveries_to_attempt(uuid[], uuid[])'::regprocedure) as definition",
    )
  ).rows[0]?.definition;
  const other = values.function === undefined ? undefined : fs.readFileSync(values.function, "utf8");
  const {
    rows: [tenant],
  } = await client.query<{ id: string }>("insert into integrator.tenants (name) values ('x') returning id");
  const tenantId = tenant?.id ?? "";
  for (let n = 0; n < 100; n++)
    await client.query(
      "insert into integrator.webhook_subscriptions (tenant_id, url, events, secret_encrypted, created_by) values ($1, $2, $3, $4, 'e')",
      [tenantId, `https://x.example.com/${n}`, ["intake.submitted"], "sealed".padEnd(120, "x")],
    );
  await client.query("select integrator.emit_event($1, 'intake.submitted', $2::jsonb) from generate_series(1, 60)", [
    tenantId,
    JSON.stringify(intakeEventData()),
  ]);
  await client.query("analyze");
  const events = (
    await client.query<{ ids: string[] }>(
      "select array_agg(id) as ids from integrator.webhook_deliveries group by event_id",
    )
  ).rows.map((row) => row.ids);

  /** Each event's first `size` deliveries read once, on a new connection: the median ms. */
  const time = async (size: number): Promise<number> => {
    const reader = createDatabase(url, 1, "integrator-read-parts");
    try {
      const times: number[] = [];
      for (const ids of events) {
        const wanted = ids.slice(0, size).map((deliveryId) => ({ tenantId, deliveryId }));
        const started = performance.now();
        const read = await findDeliveriesToSend(reader, wanted);
        times.push(performance.now() - started);
        if (read.includes(undefined)) throw new Error(`a delivery of ${wanted.length} was not read`);
      }
      return median(times);
    } finally {
      await reader.destroy();
    }
  };
  const texts = { current, ...(other === undefined ? {} : { other }) };
  const results = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++)
    for (const [label, text] of Object.entries(texts)) {
      if (other !== undefined && text !== undefined) await client.query(text);
      for (const size of SIZES) {
        const key = `${label}, ${size}`;
        results.set(key, [...(results.get(key) ?? []), await time(size)]);
      }
    }
  for (const size of SIZES)
    for (const label of Object.keys(texts)) {
      const medians = results.get(`${label}, ${size}`) ?? [];
      console.log(
        `${label} text, ${size} ${size === 1 ? "delivery" : "deliveries"}: median ${median(medians).toFixed(3)} ms (rounds: ${medians.map((ms) => ms.toFixed(3)).join(", ")})`,
      );
    }
} finally {
  await close();
}
