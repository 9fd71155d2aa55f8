// npm run bench:webhooks — a benchmark, not a test. On a throwaway embedded PostgreSQL, the real worker
// (deliver_webhook, the settings of foundation/config.ts) delivers to a local HTTPS receiver (test CA made
// with openssl) in a process of its own (scripts/bench/receiver.ts), as an integrator's endpoint would be.
// Its floor is graphile-worker itself on the same runner: jobs that do nothing. Rounds alternate a floor
// segment (N no-op jobs queued at once) and a delivery segment (N deliveries' worth of
// intake.submitted events queued at once, at fan-out 1 or 100), so the figure that counts is the ratio
// deliveries/s ÷ no-op jobs/s in the same run. Between them a third segment bounds that ratio: N jobs
// that each only send one signed request of a delivery's size through the same sender (pooled HTTPS) to
// the same receiver, with no database work of their own; sends/s ÷ no-op jobs/s is what a delivery could
// reach if reading and recording it cost nothing. Then, per fan-out, events are emitted one transaction
// each at half the measured delivery rate, and the event-to-receipt latency is taken.
//
//   npm run bench:webhooks                       quick: fan-out 1 and 100, 2 rounds of 1000 jobs
//   npm run bench:webhooks -- --rounds 3 --jobs 3000 --paced-seconds 10 --fan-outs 1,10,100
//   WORKER_CONCURRENCY=20 npm run bench:webhooks
//   npm run bench:webhooks -- --profile /tmp/webhooks.cpuprofile
//                                                also a CPU profile of the delivery segments only
//                                                (read it with scripts/bench/profile-summary.ts)
//   npm run bench:webhooks -- --statements       also PostgreSQL's time per delivery, statement by
//                                                statement (pg_stat_statements, the delivery segments only)
//   npm run bench:webhooks -- --fairness         instead, the noisy neighbour (scripts/bench/fairness.ts)
//   npm run bench:webhooks -- --db-connections   also the most connections the worker's pools held open and
//                                                busy at once (scripts/bench/connections.ts)
import { fork } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { once } from "node:events";
import { newWebhookSecret } from "../../foundation/signing.ts";
import { cpuProfiler } from "./profile.ts";
import { STATEMENT_SETTINGS, statementProfile } from "./statements.ts";
import { cpuMeter, cpuText, meanCpu, processCpuMs, type CpuPerOperation } from "./cpu.ts";
import type { ReceiverMessage } from "./receiver.ts";
import { sampleConnections } from "./connections.ts";
import type { Knex } from "knex";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildServices, migrateAll } from "../../app/services.ts";
import { loadConfig } from "../../foundation/config.ts";
import { createDatabase, startEmbeddedPostgres } from "../../db/database.ts";
import { freePort } from "../throwaway-postgres.ts";
import { emitEvent } from "../../db/events.ts";
import type { Services } from "../../foundation/services.ts";
import { createTenant } from "../../db/principals.ts";
import { createSubscription } from "../../db/webhooks/subscriptions.ts";
import { startWorker } from "../../worker/runner.ts";
import { fairnessBenchmark } from "./fairness.ts";
import { sendSettings, sendWebhook } from "../../worker/sender.ts";
import { canonicalJson } from "../../foundation/canonical-json.ts";
import { taskList } from "../../worker/tasks/index.ts";
import { deliveryHeaders } from "../../worker/tasks/deliver_webhook.ts";
import { makeTestCa, RECEIVER_HOST } from "../../test/helpers/https-receiver.ts";
import { intakeEventData, webhookEnv } from "../../test/helpers/webhooks.ts";
import {
  fixed,
  flags,
  listFlag,
  log,
  machine,
  mean,
  median,
  met,
  numberFlag,
  percentile,
  until,
  uptime,
} from "./common.ts";

const options = flags();
const FAN_OUTS = listFlag(options, "fan-outs", [1, 100]);
const ROUNDS = numberFlag(options, "rounds", 2);
const JOBS = numberFlag(options, "jobs", 1000);
const PACED_SECONDS = numberFlag(options, "paced-seconds", 5);
const PROFILE = options.get("profile");
const STATEMENTS = options.has("statements");
const CONNECTION_PEAKS = options.has("db-connections");

/**
 * The goals by fan-out: deliveries/s ÷ no-op jobs/s, event-to-receipt p50 at half the delivery rate, and at
 * fan-out 1 PostgreSQL's CPU per delivery ÷ per no-op job (docs/performance.md, current figures).
 */
function goalsFor(fanOut: number): { ratio: number; p50Ms: number; postgres?: number } {
  return fanOut <= 1 ? { ratio: 0.5, p50Ms: 10, postgres: 1.5 } : { ratio: 0.7, p50Ms: 20 };
}

/** A delivery that failed (the benchmark's receiver accepts everything, so none should): its message. */
async function failedDelivery(db: Knex): Promise<string | undefined> {
  const failed = await db("integrator.webhook_deliveries")
    .whereNotNull("error_message")
    .first<{ error_message: string } | undefined>("error_message");
  return failed && `a delivery failed: ${failed.error_message}`;
}

/** One timed segment: operations/s and CPU per operation. */
interface Segment {
  rate: number;
  cpu: CpuPerOperation;
}

interface Row {
  fanOut: number;
  deliveries: number[];
  noops: number[];
  /** Send-only jobs/s (the bound), each round. */
  sends: number[];
  /** CPU per delivery and per no-op job, each segment (scripts/bench/cpu.ts). */
  deliveryCpu: CpuPerOperation[];
  /** The receiver process's CPU per delivery, ms, each delivery segment. */
  receiverCpu: number[];
  noopCpu: CpuPerOperation[];
  sendCpu: CpuPerOperation[];
  pacedRate: number;
  latencies: number[];
  undelivered: number;
}

async function main(): Promise<void> {
  const before = uptime();
  const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-bench-"));
  const ca = makeTestCa();
  const postgres = await startEmbeddedPostgres({
    dataDir: tempDir,
    port: await freePort(),
    database: "integrator_bench",
    settings: STATEMENTS ? STATEMENT_SETTINGS : undefined,
  });
  const db = createDatabase(postgres.url, 20, "integrator-bench");
  let services: Services | undefined;
  const stops: (() => Promise<void>)[] = [];
  try {
    await migrateAll(db, postgres.url);
    const statements = STATEMENTS ? await statementProfile(postgres.url) : undefined;
    if (statements) stops.push(() => statements.close());
    const connections = CONNECTION_PEAKS ? await sampleConnections(postgres.url) : undefined;
    if (connections) stops.push(() => connections.close());
    const config = loadConfig({
      WORKER_CONCURRENCY: "5",
      ...process.env,
      // Development: the receiver's test-only settings (WEBHOOK_RESOLVE, WEBHOOK_CA_FILE, private targets) are refused in production.
      NODE_ENV: "development",
      DATABASE_URL: postgres.url,
      DATA_DIR: tempDir,
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      LOG_LEVEL: "silent",
      DB_POOL_MAX: "20",
      // The local receiver's settings: its test CA, its name resolved to loopback, its ephemeral port.
      ...webhookEnv(ca),
    });
    services = await buildServices(config, db);

    /** When each paced event was emitted, by submission: wall-clock ms, as the receiver's process reports receipts. */
    const emittedAt = new Map<string, number>();
    const latencies: number[] = [];
    let received = 0;
    /** Requests of the send-only segments: not deliveries, so not counted in `received`. */
    const NOT_A_DELIVERY_PATH = "/send-only";
    const receiver = fork(new URL("./receiver.ts", import.meta.url), [ca.dir, NOT_A_DELIVERY_PATH]);
    const port = await new Promise<number>((resolve, reject) => {
      receiver.once("exit", (code) => reject(new Error(`the receiver exited with ${code}`)));
      receiver.on("message", (message: ReceiverMessage) => {
        if ("port" in message) {
          resolve(message.port);
          return;
        }
        for (const [submissionId, receivedAt] of message.receipts) {
          if (submissionId === "") continue;
          received++;
          const sentAt = emittedAt.get(submissionId);
          if (sentAt !== undefined) latencies.push(receivedAt - sentAt);
        }
      });
    });
    stops.push(async () => {
      if (receiver.exitCode !== null || receiver.signalCode !== null) return;
      const exited = once(receiver, "exit");
      receiver.disconnect();
      await exited;
    });
    const receiverUrl = (pathname: string) => `https://${RECEIVER_HOST}:${port}${pathname}`;
    const receiverCpuMs = () => processCpuMs(receiver.pid ?? 0);

    let noopsDone = 0;
    let sendsDone = 0;
    // What a delivery sends, without the database: a signed body of an intake.submitted delivery's size,
    // through a sender like the worker's own (its connection pool and URL memo).
    const send = sendSettings(config.webhooks);
    const sendSecret = newWebhookSecret();
    const sendEventId = `evt_${randomUUID()}`;
    const sendBody = canonicalJson({
      id: sendEventId,
      event: "intake.submitted",
      tenant_id: randomUUID(),
      timestamp: new Date().toISOString(),
      data: intakeEventData({ submission_id: randomUUID(), module: "bench" }),
    });
    const worker = await startWorker(services, postgres.url, {
      tasks: {
        ...taskList(services),
        bench_noop: async () => {
          noopsDone++;
        },
        bench_send: async (_payload, helpers) => {
          const id = randomUUID();
          const outcome = await sendWebhook(
            {
              url: receiverUrl(NOT_A_DELIVERY_PATH),
              body: sendBody,
              headers: deliveryHeaders({
                userAgent: "integrator-api-webhooks/bench",
                eventType: "intake.submitted",
                deliveryId: id,
                test: false,
                eventId: sendEventId,
                secrets: [sendSecret],
                attemptedAt: new Date(),
                body: sendBody,
              }),
            },
            send,
            helpers.abortSignal,
          );
          if (!outcome.delivered) throw new Error(`a send-only request failed: ${outcome.errorMessage}`);
          sendsDone++;
        },
      },
    });
    stops.push(() => worker.stop());
    // Delivery jobs that ended, successfully: a job ends once every one of its deliveries is recorded.
    let deliveryJobsDone = 0;
    const countDeliveryJobs = (events: typeof worker.slots.events) =>
      events.on("job:success", ({ job }) => {
        if (job.task_identifier === "deliver_webhook" || job.task_identifier === "deliver_webhooks") deliveryJobsDone++;
      });
    countDeliveryJobs(worker.slots.events);
    // A delivery job that fails runs again only after graphile-worker's backoff: say so, and why.
    worker.slots.events.on("job:failed", ({ job, error }) =>
      log(
        `a ${job.task_identifier} job failed (it runs again later): ${error instanceof Error ? error.message : String(error)}`,
      ),
    );

    // The floor: graphile-worker's own throughput on this runner, jobs that do nothing, queued at once.
    // Its bound: the same number of jobs that each send one request and touch no table of ours.
    const jobSegment = async (task: "bench_noop" | "bench_send", done: () => number): Promise<Segment> => {
      const target = done() + JOBS;
      const cpuPer = cpuMeter(postgres.databaseDir);
      const started = performance.now();
      await db.raw("select graphile_worker.add_job(?, '{}'::json) from generate_series(1, ?)", [task, JOBS]);
      await until(() => done() >= target, `the ${task} jobs`);
      return { rate: JOBS / ((performance.now() - started) / 1000), cpu: cpuPer(JOBS) };
    };
    const noopSegment = () => jobSegment("bench_noop", () => noopsDone);
    const sendSegment = () => jobSegment("bench_send", () => sendsDone);

    const profiler = PROFILE === undefined ? undefined : await cpuProfiler();
    const rows: Row[] = [];
    for (const fanOut of FAN_OUTS) {
      const tenant = await createTenant(db, `bench ${fanOut}`);
      const sealed = services.secretBox.seal(newWebhookSecret());
      for (let i = 0; i < fanOut; i++) {
        await createSubscription(db, {
          tenantId: tenant.id,
          url: receiverUrl(`/fan-out-${fanOut}/${i}`),
          events: ["intake.submitted"],
          secretSealed: sealed,
          createdBy: "bench",
        });
      }
      // A delivery segment: JOBS deliveries' worth of events emitted in one statement (queued at once,
      // like the no-op jobs), timed from the emission to the last receipt and the last record (each
      // event's job ends once its deliveries are recorded), so that no delivery's work spills into the
      // next segment. Also how long the emitting statement took.
      const deliverySegment = async (): Promise<
        Segment & { emissionMs: number; deliveries: number; receiverMs: number }
      > => {
        const events = Math.max(1, Math.round(JOBS / fanOut));
        const target = received + events * fanOut;
        const jobsTarget = deliveryJobsDone + events;
        const cpuPer = cpuMeter(postgres.databaseDir);
        const receiverBefore = receiverCpuMs();
        const started = performance.now();
        await db.raw(
          `select integrator.emit_event(?::uuid, 'intake.submitted', jsonb_build_object(
             'submission_id', gen_random_uuid()::text, 'external_reference', null, 'module', 'bench', 'tier', null,
             'status', 'received', 'item_count', 1, 'accepted_count', 1, 'failed_count', 0))
           from generate_series(1, ?)`,
          [tenant.id, events],
        );
        const emissionMs = performance.now() - started;
        await until(
          () => received >= target && deliveryJobsDone >= jobsTarget,
          `${events * fanOut} deliveries at fan-out ${fanOut}`,
          { failure: () => failedDelivery(db) },
        );
        const rate = (events * fanOut) / ((performance.now() - started) / 1000);
        return {
          rate,
          cpu: cpuPer(events * fanOut),
          emissionMs,
          deliveries: events * fanOut,
          receiverMs: (receiverCpuMs() - receiverBefore) / (events * fanOut),
        };
      };
      const row: Row = {
        fanOut,
        deliveries: [],
        noops: [],
        sends: [],
        deliveryCpu: [],
        receiverCpu: [],
        noopCpu: [],
        sendCpu: [],
        pacedRate: 0,
        latencies: [],
        undelivered: 0,
      };
      await deliverySegment(); // warm-up: TLS contexts, the JIT, the pools
      await sendSegment();
      for (let round = 1; round <= ROUNDS; round++) {
        const noops = await noopSegment();
        const sends = await sendSegment();
        const since = await statements?.mark();
        await profiler?.resume();
        const deliveries = await deliverySegment();
        await profiler?.pause();
        if (since) await statements?.add(`fan-out ${fanOut}`, since, deliveries.deliveries);
        row.noops.push(noops.rate);
        row.deliveries.push(deliveries.rate);
        row.noopCpu.push(noops.cpu);
        row.sends.push(sends.rate);
        row.sendCpu.push(sends.cpu);
        row.deliveryCpu.push(deliveries.cpu);
        row.receiverCpu.push(deliveries.receiverMs);
        log(
          `fan-out ${fanOut}, round ${round}: ${fixed(deliveries.rate)} deliveries/s (CPU ms each ${cpuText(deliveries.cpu)}) against ${fixed(noops.rate)} no-op jobs/s (${cpuText(noops.cpu)}): ${fixed(deliveries.rate / noops.rate, 2)}; send-only ${fixed(sends.rate)} jobs/s (${cpuText(sends.cpu)}): ${fixed(sends.rate / noops.rate, 2)} (the emission statement took ${fixed(deliveries.emissionMs)} ms of the segment)`,
        );
      }

      // Event to receipt at half the measured delivery rate: one event per transaction, as intake emits.
      row.pacedRate = mean(row.deliveries) / 2;
      const eventsPerSecond = row.pacedRate / fanOut;
      const pacedEvents = Math.max(3, Math.round(eventsPerSecond * PACED_SECONDS));
      latencies.length = 0;
      const target = received + pacedEvents * fanOut;
      const started = performance.now();
      for (let i = 0; i < pacedEvents; i++) {
        const due = started + (i * 1000) / eventsPerSecond;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const submissionId = randomUUID();
        emittedAt.set(submissionId, performance.timeOrigin + performance.now());
        await db.transaction((trx) =>
          emitEvent(
            trx,
            tenant.id,
            "intake.submitted",
            intakeEventData({ submission_id: submissionId, module: "bench" }),
          ),
        );
      }
      await until(() => received >= target, "the paced deliveries");
      row.latencies = [...latencies].sort((a, b) => a - b);
      const pending = async () =>
        Number(
          (
            await db("integrator.webhook_deliveries")
              .where({ tenant_id: tenant.id })
              .whereNot({ status: "delivered" })
              .count<{ count: number }[]>("* as count")
          )[0]?.count ?? 0,
        );
      await until(async () => (await pending()) === 0, "the last outcomes to be recorded").catch(() => undefined);
      row.undelivered = await pending();
      log(
        `fan-out ${fanOut}: paced at ${fixed(eventsPerSecond, 1)} events/s (${fixed(row.pacedRate)} deliveries/s), event-to-receipt p50 ${fixed(percentile(row.latencies, 50), 1)} ms`,
      );
      rows.push(row);
    }
    if (profiler && PROFILE !== undefined) {
      await profiler.save(PROFILE);
      log(`CPU profile of the delivery segments: ${PROFILE}`);
    }

    const lines = [
      `Machine: ${machine()}; PostgreSQL ${(await db.raw<{ rows: { server_version: string }[] }>("show server_version")).rows[0]?.server_version} (embedded); WORKER_CONCURRENCY=${config.workerConcurrency}; worker and emitters in one process, the receiver in another.`,
      `Load before: ${before}`,
      `Load after:  ${uptime()}`,
      "",
      `${ROUNDS} round(s) per fan-out, each a segment of ${JOBS} no-op jobs, one of ${JOBS} send-only jobs and one of ${JOBS} deliveries, each queued at once; then events one transaction each at half the delivery rate for ${PACED_SECONDS} s.`,
      "",
      "| Fan-out | Deliveries/s | No-op jobs/s | ratio | goal | | Send-only jobs/s | its ratio (the bound) | Paced at deliveries/s | Event-to-receipt p50 | p99 | p50 goal | | not delivered | CPU ms per delivery: Node / PostgreSQL / machine | the receiver's | per no-op job | per send-only job | PostgreSQL per delivery ÷ per no-op job | goal |",
      "|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|",
      ...rows.map((row) => {
        // The median over rounds of each delivery (and send-only) segment against the no-op segment of its round.
        const against = (rates: number[]) =>
          median(rates.map((value, index) => value / (row.noops[index] ?? Number.NaN)));
        const ratio = against(row.deliveries);
        const p50 = percentile(row.latencies, 50);
        const goal = goalsFor(row.fanOut);
        // PostgreSQL's CPU per delivery against per no-op job, round by round (each against its own round's floor).
        const postgresRatio = median(
          row.deliveryCpu.map((cpu, index) => cpu.postgresMs / (row.noopCpu[index]?.postgresMs ?? Number.NaN)),
        );
        return `| ${row.fanOut} | ${fixed(mean(row.deliveries))} | ${fixed(mean(row.noops))} | ${fixed(ratio, 2)} | ≥ ${goal.ratio} | ${met(ratio >= goal.ratio)} | ${fixed(mean(row.sends))} | ${fixed(against(row.sends), 2)} | ${fixed(row.pacedRate)} | ${fixed(p50, 1)} ms | ${fixed(percentile(row.latencies, 99), 1)} ms | ≤ ${goal.p50Ms} ms | ${met(p50 <= goal.p50Ms)} | ${row.undelivered} | ${cpuText(meanCpu(row.deliveryCpu))} | ${fixed(mean(row.receiverCpu), 2)} | ${cpuText(meanCpu(row.noopCpu))} | ${cpuText(meanCpu(row.sendCpu))} | ${fixed(postgresRatio, 2)} × | ${goal.postgres === undefined ? "" : `≤ ${goal.postgres} × ${met(postgresRatio <= goal.postgres)}`} |`;
      }),
      "",
      "CPU ms per delivery or job: this process's (the worker and the emitting connections), the embedded PostgreSQL's processes' and the whole machine's busy time over a segment (emission or queueing included, and the receiver's process), divided by its deliveries or jobs; the receiver's process's alone; means over rounds.",
      "Send-only: a job that sends one signed request of a delivery's size through a sender like the worker's (pooled HTTPS) to the same receiver and writes nothing of ours; its ratio to the no-op jobs is what deliveries could reach if reading the delivery and recording the attempt cost nothing.",
      "",
      ...rows.flatMap((row) => statements?.table(`fan-out ${row.fanOut}`).concat("") ?? []),
      ...(connections
        ? [
            `graphile-worker's pool is integrator-worker (10 at most, one of them held for LISTEN); the services' pool, which reads and records deliveries, is integrator-bench here (DB_POOL_MAX ${config.dbPoolMax}; integrator-worker too in a worker process), shared with the emitting statements.`,
            ...connections.table(),
            "",
          ]
        : []),
    ];
    process.stdout.write(lines.join("\n"));
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await db.destroy();
    await postgres.stop();
    ca.remove();
    fs.rmSync(tempDir, { recursive: true, force: true });
  }
}

(options.has("fairness") ? fairnessBenchmark() : main()).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
