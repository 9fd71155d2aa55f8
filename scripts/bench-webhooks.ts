// npm run bench:webhooks — a benchmark, not a test. On a throwaway embedded PostgreSQL, with the
// real deliver_webhook worker and a local HTTPS receiver (test CA made with openssl), it measures
// end-to-end deliveries per second and event-to-receipt latency for 1, 10 and 100 matching
// subscriptions per event, next to graphile-worker's own no-op job throughput in the same run.
// Prints a Markdown table for BENCHMARKS.md. WORKER_CONCURRENCY (default 5) is honoured.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildServices, migrateAll } from "../server/lifecycle.ts";
import { loadConfig } from "../server/config.ts";
import { createDatabase, startEmbeddedPostgres } from "../db/database.ts";
import { freePort } from "./throwaway-postgres.ts";
import { emitEvent, type EventDataByKind } from "../db/events.ts";
import type { Services } from "../server/services.ts";
import { createTenant } from "../db/principals.ts";
import { createSubscription } from "../db/webhooks.ts";
import { startWorker } from "../worker/runner.ts";
import { taskList } from "../worker/tasks/index.ts";
import { makeTestCa, RECEIVER_HOST, startReceiver } from "../test/helpers/https-receiver.ts";

const FAN_OUTS = [1, 10, 100];
/** Deliveries per burst run, whatever the fan-out (events = BURST_DELIVERIES / fan-out). */
const BURST_DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 1500);
/** Events sent one at a time (each after the previous one's deliveries all arrived), per fan-out. */
const PACED_EVENTS: Record<number, number> = { 1: 100, 10: 30, 100: 6 };
const NOOP_JOBS = 5000;
/** Concurrent emitters in a burst, like several API processes submitting at once. */
const EMITTERS = 4;
const DEADLINE_SECONDS = 180;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

const ms = (value: number): string =>
  Number.isNaN(value) ? "–" : value < 10 ? `${value.toFixed(1)} ms` : `${Math.round(value)} ms`;

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_SECONDS * 1000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`benchmark gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function machine(): string {
  const cpuinfo = fs.readFileSync("/proc/cpuinfo", "utf8");
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? "unknown CPU";
  const memory = `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`;
  return `${os.availableParallelism()} CPUs (nproc), ${model}, ${memory} RAM, Node ${process.version}, ${os.type()} ${os.release()}`;
}

function intakeData(submissionId: string): EventDataByKind["intake.submitted"] {
  return {
    submission_id: submissionId,
    external_reference: null,
    module: "bench",
    tier: null,
    status: "received",
    item_count: 1,
    accepted_count: 1,
    failed_count: 0,
  };
}

interface Row {
  fanOut: number;
  events: number;
  deliveries: number;
  perSecond: number;
  burst: number[];
  paced: number[];
  pacedEvents: number;
}

async function main(): Promise<void> {
  const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-bench-"));
  const ca = makeTestCa();
  const postgres = await startEmbeddedPostgres({
    dataDir: tempDir,
    port: await freePort(),
    database: "integrator_bench",
  });
  const db = createDatabase(postgres.url, 20, "integrator-bench");
  let services: Services | undefined;
  const stops: (() => Promise<void>)[] = [];
  try {
    await migrateAll(db, postgres.url);
    const concurrency = process.env.WORKER_CONCURRENCY ?? "5";
    const config = loadConfig({
      NODE_ENV: "development",
      DATABASE_URL: postgres.url,
      DATA_DIR: tempDir,
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      LOG_LEVEL: "silent",
      DB_POOL_MAX: "20",
      WORKER_CONCURRENCY: concurrency,
      WEBHOOK_RETRY_BASE_SECONDS: "0",
      WEBHOOK_RESOLVE: `${RECEIVER_HOST}=127.0.0.1`,
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    });
    services = await buildServices(config, db);

    // Receipt times by event (its submission_id) on one side, emission times on the other.
    const emittedAt = new Map<string, number>();
    const latencies: number[] = [];
    let received = 0;
    const receiver = await startReceiver(ca, () => ({ status: 204 }), {
      keepRecords: false,
      onRequest: (request) => {
        const event = JSON.parse(request.rawBody.toString("utf8")) as { data: { submission_id: string } };
        const sentAt = emittedAt.get(event.data.submission_id);
        if (sentAt !== undefined) latencies.push(request.receivedAt - sentAt);
        received++;
      },
    });
    stops.push(() => receiver.close());

    let noopsDone = 0;
    const worker = await startWorker(services, postgres.url, {
      tasks: {
        ...taskList(services),
        bench_noop: async () => {
          noopsDone++;
        },
      },
    });
    stops.push(() => worker.stop());

    // graphile-worker's own ceiling on this machine: jobs that do nothing, queued at once.
    const noopStart = performance.now();
    await db.raw("select graphile_worker.add_job('bench_noop', '{}'::json) from generate_series(1, ?)", [NOOP_JOBS]);
    await until(() => noopsDone >= NOOP_JOBS, "the no-op jobs");
    const noopPerSecond = NOOP_JOBS / ((performance.now() - noopStart) / 1000);
    process.stderr.write(`no-op jobs: ${noopPerSecond.toFixed(0)}/s\n`);

    const rows: Row[] = [];
    const cpuBefore = process.cpuUsage();
    const wallBefore = performance.now();
    for (const fanOut of FAN_OUTS) {
      const tenant = await createTenant(db, `bench ${fanOut}`);
      const sealed = services.secretBox.seal(`whsec_${randomBytes(32).toString("base64url")}`);
      for (let i = 0; i < fanOut; i++) {
        await createSubscription(db, {
          tenantId: tenant.id,
          url: receiver.url(`/fan-out-${fanOut}/${i}`),
          events: ["intake.submitted"],
          secretSealed: sealed,
          createdBy: "bench",
        });
      }
      const emit = async () => {
        const submissionId = crypto.randomUUID();
        emittedAt.set(submissionId, performance.now());
        await db.transaction((trx) => emitEvent(trx, tenant.id, "intake.submitted", intakeData(submissionId)));
      };

      // Burst: all events emitted as fast as EMITTERS concurrent callers can; throughput from the
      // first emission to the last receipt.
      const events = Math.max(1, Math.round(BURST_DELIVERIES / fanOut));
      latencies.length = 0;
      received = 0;
      const burstStart = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: EMITTERS }, async () => {
          while (next < events) {
            next++;
            await emit();
          }
        }),
      );
      await until(() => received >= events * fanOut, `${events * fanOut} deliveries at fan-out ${fanOut}`);
      const perSecond = (events * fanOut) / ((performance.now() - burstStart) / 1000);
      const burst = [...latencies].sort((a, b) => a - b);

      // Paced: one event at a time on an idle system.
      latencies.length = 0;
      received = 0;
      const pacedEvents = PACED_EVENTS[fanOut] ?? 10;
      for (let i = 0; i < pacedEvents; i++) {
        await emit();
        await until(() => received >= (i + 1) * fanOut, "a paced event's deliveries");
      }
      const paced = [...latencies].sort((a, b) => a - b);
      // The receiver sees a request before the worker records its outcome: let the records catch up.
      const pendingLeft = async () =>
        Number(
          (
            await db("integrator.webhook_deliveries")
              .where({ tenant_id: tenant.id, status: "pending" })
              .count<{ count: number }[]>("* as count")
          )[0]?.count ?? 0,
        );
      await until(async () => (await pendingLeft()) === 0, "the last outcomes to be recorded").catch(() => undefined);
      const failed = await db("integrator.webhook_deliveries")
        .where({ tenant_id: tenant.id })
        .whereNot({ status: "delivered" })
        .count<{ count: number }[]>("* as count");
      if (Number(failed[0]?.count ?? 0) > 0) {
        const reasons = await db("integrator.webhook_deliveries")
          .where({ tenant_id: tenant.id })
          .whereNot({ status: "delivered" })
          .select("status", "attempts", "error_message");
        process.stderr.write(
          `warning: ${failed[0]?.count} deliveries at fan-out ${fanOut} are not delivered: ${JSON.stringify(reasons)}\n`,
        );
      }
      const retried = await db("integrator.webhook_deliveries")
        .where({ tenant_id: tenant.id })
        .where("attempts", ">", 1)
        .select("status", "attempts", "error_message");
      if (retried.length > 0)
        process.stderr.write(
          `note: ${retried.length} deliveries needed more than one attempt: ${JSON.stringify(retried.slice(0, 5))}\n`,
        );
      rows.push({ fanOut, events, deliveries: events * fanOut, perSecond, burst, paced, pacedEvents });
      process.stderr.write(`fan-out ${fanOut}: ${perSecond.toFixed(0)} deliveries/s\n`);
    }

    const cpu = process.cpuUsage(cpuBefore);
    const busy = (cpu.user + cpu.system) / 1000 / (performance.now() - wallBefore);
    const lines = [
      `Machine: ${machine()}. PostgreSQL ${(await db.raw<{ rows: { server_version: string }[] }>("show server_version")).rows[0]?.server_version} (embedded), WORKER_CONCURRENCY=${concurrency}, one process for worker and receiver.`,
      "",
      "| Matching subscriptions per event | Events | Deliveries | Deliveries/s | Burst latency p50 | Burst latency p99 | One event at a time: p50 | One event at a time: p99 |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...rows.map(
        (row) =>
          `| ${row.fanOut} | ${row.events} | ${row.deliveries} | ${row.perSecond.toFixed(0)} | ${ms(percentile(row.burst, 50))} | ${ms(percentile(row.burst, 99))} | ${ms(percentile(row.paced, 50))} | ${ms(percentile(row.paced, 99))} (${row.pacedEvents} events) |`,
      ),
      "",
      `graphile-worker no-op jobs, same worker and run: ${noopPerSecond.toFixed(0)} jobs/s (${NOOP_JOBS} jobs queued at once).`,
      `The benchmark process (worker, receiver and emitters) used ${(busy * 100).toFixed(0)}% of one CPU during the webhook runs; load average at the end: ${os
        .loadavg()
        .map((load) => load.toFixed(2))
        .join(", ")}.`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await db.destroy();
    await postgres.stop();
    ca.remove();
    fs.rmSync(tempDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
