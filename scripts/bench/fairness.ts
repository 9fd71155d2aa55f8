// npm run bench:webhooks -- --fairness — a benchmark, not a test. A noisy neighbour's deliveries must not hold up another
// tenant's: on a throwaway embedded PostgreSQL with the real worker and a local HTTPS receiver, tenant A has
// BENCH_NOISY_DELIVERIES (default 2000) due deliveries to endpoints that never answer (each attempt hangs
// until WEBHOOK_TIMEOUT_MS, default 10000 here as in production); tenant B emits one event at a time. Prints
// tenant B's wait (event to first attempt received) without and with tenant A, and the cost of queueing one
// delivery (emit_event) with an empty queue and with 10,000 queued jobs. WORKER_CONCURRENCY (default 5) is
// honoured.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { buildServices, migrateAll } from "../../app/services.ts";
import { loadConfig } from "../../foundation/config.ts";
import { createDatabase, startEmbeddedPostgres } from "../../db/database.ts";
import { freePort } from "../throwaway-postgres.ts";
import { emitEvent } from "../../db/events.ts";
import { createTenant } from "../../db/principals.ts";
import { createSubscription } from "../../db/webhooks/subscriptions.ts";
import { startWorker } from "../../worker/runner.ts";
import { makeTestCa, startReceiver } from "../../test/helpers/https-receiver.ts";
import { machine, percentile, until, uptime } from "./common.ts";
import { webhookEnv } from "../../test/helpers/webhooks.ts";

const NOISY_DELIVERIES = Number(process.env.BENCH_NOISY_DELIVERIES ?? 2000);
const NOISY_SUBSCRIPTIONS = 50;
const B_EVENTS = Number(process.env.BENCH_B_EVENTS ?? 10);
const TIMEOUT_MS = process.env.WEBHOOK_TIMEOUT_MS ?? "10000";

export async function fairnessBenchmark(): Promise<void> {
  const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-bench-fairness-"));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-bench-data-"));
  const ca = makeTestCa();
  const pgServer = await startEmbeddedPostgres({
    dataDir: tempDir,
    port: await freePort(),
    database: "postgres",
  });
  const receiver = await startReceiver(
    ca,
    (request) => (request.path.startsWith("/hang") ? "stall" : { status: 204 }),
    {
      keepRecords: true,
    },
  );
  const config = loadConfig({
    NODE_ENV: "test",
    DATABASE_URL: pgServer.url,
    DATA_DIR: dataDir,
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    LOG_LEVEL: "silent",
    WEBHOOK_TIMEOUT_MS: TIMEOUT_MS,
    MAX_DELIVERY_ATTEMPTS: "1",
    // The local receiver's settings: its test CA, its name resolved to loopback, its ephemeral port.
    ...webhookEnv(ca),
    SHUTDOWN_TIMEOUT_MS: "500",
    WORKER_CONCURRENCY: process.env.WORKER_CONCURRENCY ?? "5",
  });
  const db = createDatabase(pgServer.url, 10);
  await migrateAll(db, pgServer.url);
  const services = await buildServices(config, db);
  const subscribe = async (tenantId: string, pathname: string) =>
    createSubscription(db, {
      tenantId,
      url: receiver.url(pathname),
      events: ["*"],
      secretSealed: services.secretBox.seal(`whsec_${randomBytes(32).toString("base64url")}`),
      createdBy: "bench",
    });
  const tenantA = await createTenant(db, "Noisy tenant A");
  const tenantB = await createTenant(db, "Tenant B");
  for (let i = 0; i < NOISY_SUBSCRIPTIONS; i++) await subscribe(tenantA.id, `/hang-${i}`);
  await subscribe(tenantB.id, "/tenant-b");
  const worker = await startWorker(services, pgServer.url, { pollInterval: 1000 });

  /** B emits one event at a time; its wait is event to the first attempt's arrival. */
  const measureB = async (): Promise<number[]> => {
    const waits: number[] = [];
    for (let i = 0; i < B_EVENTS; i++) {
      const before = receiver.receivedAt("/tenant-b").length;
      const emitted = performance.now();
      await emitEvent(db, tenantB.id, "scorecard.created", { scorecard_id: crypto.randomUUID() });
      const arrived = await until(() => receiver.receivedAt("/tenant-b")[before], "tenant B's delivery", {
        seconds: 600,
        intervalMs: 5,
      });
      waits.push(arrived.receivedAt - emitted);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return waits.sort((a, b) => a - b);
  };

  const alone = await measureB();
  const events = Math.ceil(NOISY_DELIVERIES / NOISY_SUBSCRIPTIONS);
  await db.transaction(async (trx) => {
    for (let i = 0; i < events; i++)
      await emitEvent(trx, tenantA.id, "scorecard.created", { scorecard_id: crypto.randomUUID() });
  });
  await until(
    () => receiver.received.filter((r) => r.path.startsWith("/hang")).length >= config.workerConcurrency,
    "tenant A's attempts to hang",
    { seconds: 60, intervalMs: 5 },
  );
  const noisy = await measureB();
  const hangingA = receiver.received.filter((r) => r.path.startsWith("/hang")).length;

  // Queueing cost: emit_event for B on one long-lived connection, with an empty queue and with 10,000 jobs.
  const client = new pg.Client({ connectionString: pgServer.url });
  await client.connect();
  await worker.stop();
  await client.query("delete from graphile_worker._private_jobs");
  const emitTimed = async (n: number): Promise<number> => {
    const started = performance.now();
    for (let i = 0; i < n; i++)
      await client.query("select integrator.emit_event($1::uuid, 'scorecard.created', $2::jsonb)", [
        tenantB.id,
        JSON.stringify({ scorecard_id: crypto.randomUUID() }),
      ]);
    return (performance.now() - started) / n;
  };
  await emitTimed(50);
  const emptyQueue = await emitTimed(300);
  await client.query(
    `select graphile_worker.add_jobs(array_agg(row('deliver_webhook', json_build_object('n', n), null, null, 10::smallint,
       'bench:' || n, null, null)::graphile_worker.job_spec)) from generate_series(1, 10000) n`,
  );
  const fullQueue = await emitTimed(300);
  await client.end();

  const row = (label: string, waits: number[]) =>
    `| ${label} | ${waits.length} | ${Math.round(percentile(waits, 50))} ms | ${Math.round(percentile(waits, 100))} ms |`;
  console.log(
    `Machine: ${machine()}; ${uptime()}; WORKER_CONCURRENCY=${config.workerConcurrency}, WEBHOOK_TIMEOUT_MS=${TIMEOUT_MS}\n`,
  );
  console.log("| Tenant B's wait (event to first attempt received) | events | p50 | max |\n|---|---:|---:|---:|");
  console.log(row("tenant B alone", alone));
  console.log(
    row(
      `with tenant A: ${events * NOISY_SUBSCRIPTIONS} due deliveries to endpoints that hang (${hangingA} hanging)`,
      noisy,
    ),
  );
  console.log(
    `\nemit_event (one delivery, its job queued) on one connection: ${emptyQueue.toFixed(2)} ms with an empty queue, ${fullQueue.toFixed(2)} ms with 10,000 queued jobs`,
  );
  receiver.close().catch(() => undefined);
  await db.destroy();
  await pgServer.stop();
  ca.remove();
  fs.rmSync(tempDir, { recursive: true, force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
}
