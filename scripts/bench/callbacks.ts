// npm run bench:intake -- --callbacks — a benchmark, not a test. A partner-callback flood: two senders from one address
// post callbacks back to back with a wrong signature (one to a known partner, one to an unknown one) while
// tenant B reads GET /v1/me every 20 ms. Each client is a child process; segments alternate in the same run,
// flood off and flood on, so the machine's load swings hit both alike. The figure is tenant B's p50 with the
// flood ÷ its p50 in the flood-off segment just before, the median over rounds, for an oversized flood
// (~860 KiB bodies with 60,000 keys, refused by the bounds before any signature is computed); the goal is less
// than 2×. For reference, the same for the costliest flood the bounds let through (a body just under
// CALLBACK_MAX_BODY_BYTES with CALLBACK_MAX_KEYS keys, whose signature is computed), which in production the
// per-minute count per address (RATE_LIMIT_CALLBACK_PER_MINUTE) holds to 10 a second by default. The service
// runs in this process with production settings (request logs at info into /dev/null, load shedding as
// shipped); the per-minute count of callbacks per address is lifted, so that what holds the oversized flood
// back is the bounds alone.
// Flags: --rounds N (default 3), --seconds S (per segment, default 3), --interval-ms (tenant B's, 20).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import readline from "node:readline";
import { pino } from "pino";
import { buildServices, migrateAll } from "../../app/services.ts";
import { createApiServer } from "../../http/server.ts";
import { loadConfig } from "../../foundation/config.ts";
import { createLogger } from "../../foundation/logger.ts";
import { createDatabase } from "../../db/database.ts";
import { entitleTenant, insertPartner } from "../../db/partners.ts";
import { createTenant } from "../../db/principals.ts";
import { createApp } from "../../http/app.ts";
import { handlers } from "../../handlers/index.ts";
import { throwawayPostgres } from "../throwaway-postgres.ts";
import { fixed, flags, log, machine, median, met, numberFlag, percentile, uptime } from "./common.ts";
import type { Flood, FloodReport, Reads, ReadsReport } from "./callback-flood.ts";

const BENCH_PARTNER = "bench-partner";
const GOAL = 2;
const FLOOD_MARGIN_SECONDS = 1.5;

interface Segment {
  reads: ReadsReport;
  /** The service's CPU (this process) while tenant B read, in % of one CPU. */
  serviceCpu: number;
  flood: FloodReport | undefined;
}

/** A client of scripts/bench/callback-flood.ts in a child process: when it has started, and its report. */
function client<T>(script: string, job: Flood | Reads): { started: Promise<void>; report: Promise<T> } {
  const child = spawn(process.execPath, [script, JSON.stringify(job)], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = readline.createInterface({ input: child.stdout });
  let started: () => void = () => undefined;
  const startedPromise = new Promise<void>((resolve) => (started = resolve));
  const report = new Promise<T>((resolve, reject) => {
    lines.on("line", (line) => {
      if (line === "started") started();
      else resolve(JSON.parse(line) as T);
    });
    child.on("exit", (code) => reject(new Error(`a bench client (${job.role}) ended with code ${code} and no report`)));
  });
  return { started: startedPromise, report };
}

export async function callbacksBenchmark(): Promise<void> {
  const all = flags();
  const rounds = numberFlag(all, "rounds", 3);
  const seconds = numberFlag(all, "seconds", 3);
  const intervalMs = numberFlag(all, "interval-ms", 20);
  const before = uptime();
  const postgres = await throwawayPostgres("integrator-bench-callbacks");
  const config = loadConfig({
    RATE_LIMIT_PER_MINUTE: "1000000",
    RATE_LIMIT_CALLBACK_PER_MINUTE: "1000000",
    PUBLIC_BASE_URL: "https://integrator.bench.example",
    ...process.env,
    NODE_ENV: "production",
    DATABASE_URL: postgres.adminUrl,
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    LOG_LEVEL: "info",
  });
  const db = createDatabase(postgres.adminUrl, config.dbPoolMax);
  await migrateAll(db, postgres.adminUrl);
  const services = await buildServices(
    config,
    db,
    createLogger({ level: config.logLevel, destination: pino.destination({ dest: "/dev/null", sync: false }) }),
  );
  const tenantA = await createTenant(db, "Flooded partner's tenant");
  const tenantB = await createTenant(db, "Tenant B");
  await insertPartner(db, {
    partnerKey: BENCH_PARTNER,
    name: "Bench partner",
    launchUrl: "https://partner.bench.example/launch",
    contextKeys: [],
    callbackSecretEncrypted: services.secretBox.seal(randomBytes(32).toString("hex")),
  });
  await entitleTenant(db, tenantA.id, BENCH_PARTNER);
  const { token } = await services.tokens.issue({
    subject: "bench-b",
    tenantId: tenantB.id,
    roles: ["client_admin"],
    expiresInSeconds: 3600,
  });
  const api = createApiServer(await createApp(services, { handlers }), config.http);
  await new Promise<void>((resolve) => api.server.listen(0, "127.0.0.1", resolve));
  const address = api.server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const script = path.join(import.meta.dirname, "callback-flood.ts");

  /** Tenant B's reads for one segment, with the service's CPU over them. */
  const measureB = async (): Promise<Omit<Segment, "flood">> => {
    const reads = client<ReadsReport>(script, { role: "reads", url: `${baseUrl}/v1/me`, token, intervalMs, seconds });
    await reads.started;
    const cpu = process.cpuUsage();
    const startedAt = performance.now();
    const report = await reads.report;
    const used = process.cpuUsage(cpu);
    return { reads: report, serviceCpu: (used.user + used.system) / 10 / (performance.now() - startedAt) };
  };
  const quiet = async (): Promise<Segment> => ({ ...(await measureB()), flood: undefined });
  const flooded = async (shape: Pick<Flood, "keys" | "bytes">): Promise<Segment> => {
    const flood = client<FloodReport>(script, {
      role: "flood",
      urls: [`${baseUrl}/v1/callbacks/partner/${BENCH_PARTNER}`, `${baseUrl}/v1/callbacks/partner/no-such-partner`],
      tenantId: tenantA.id,
      // Long enough to cover tenant B's reads, which start once the flood runs.
      seconds: seconds + FLOOD_MARGIN_SECONDS,
      ...shape,
    });
    await flood.started;
    const measured = await measureB();
    return { ...measured, flood: await flood.report };
  };

  const oversized = { keys: 60_000, bytes: 860 * 1024 };
  const bounded = { keys: config.callbacks.maxKeys - 2, bytes: config.callbacks.maxBodyBytes - 256 };
  const rows: { label: string; quiet: Segment; flood: Segment }[] = [];
  await quiet(); // warm-up: JIT, pool, token cache
  for (let round = 1; round <= rounds; round++) {
    log(`round ${round}/${rounds}`);
    rows.push({ label: "oversized", quiet: await quiet(), flood: await flooded(oversized) });
    rows.push({ label: "bounded", quiet: await quiet(), flood: await flooded(bounded) });
  }
  await api.drain(1000);
  await db.destroy();
  await postgres.stop();

  const p50 = (segment: Segment) => percentile(segment.reads.latencies, 50);
  const answers = (flood: FloodReport) =>
    Object.entries(flood.answers)
      .map(([status, count]) => `${count}× ${status}`)
      .join(", ");
  console.log(`Machine: ${machine()}\nBefore: ${before}\nAfter: ${uptime()}`);
  console.log(
    `Settings: CALLBACK_MAX_BODY_BYTES=${config.callbacks.maxBodyBytes}, CALLBACK_MAX_KEYS=${config.callbacks.maxKeys}, ` +
      `CALLBACK_CONCURRENCY_PER_ADDRESS=${config.callbacks.concurrencyPerAddress}, RATE_LIMIT_CALLBACK_PER_MINUTE lifted; ` +
      `tenant B reads GET /v1/me every ${intervalMs} ms; ${rounds} rounds of ${seconds} s segments\n`,
  );
  console.log(
    "| Flood | Round | B's p50 without | B's p50 with | ratio | B's p99 with | B's failed reads | flood's answers (per s) | service CPU without / with | flood's CPU |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|");
  const ratios = new Map<string, number[]>();
  rows.forEach((row, index) => {
    const ratio = p50(row.flood) / p50(row.quiet);
    ratios.set(row.label, [...(ratios.get(row.label) ?? []), ratio]);
    const flood = row.flood.flood as FloodReport;
    const floodSeconds = seconds + FLOOD_MARGIN_SECONDS;
    const total = Object.values(flood.answers).reduce((sum, count) => sum + count, 0);
    console.log(
      `| ${row.label} (${Math.round(flood.bodyBytes / 1024)} KiB, ${flood.payloadKeys} keys) | ${Math.floor(index / 2) + 1} | ` +
        `${fixed(p50(row.quiet), 2)} ms | ${fixed(p50(row.flood), 2)} ms | ${fixed(ratio, 2)}× | ` +
        `${fixed(percentile(row.flood.reads.latencies, 99), 1)} ms | ${row.quiet.reads.failures + row.flood.reads.failures} | ` +
        `${answers(flood)} (${fixed(total / floodSeconds)}) | ${fixed(row.quiet.serviceCpu)}% / ${fixed(row.flood.serviceCpu)}% | ` +
        `${fixed(flood.cpuMs / floodSeconds / 10)}% |`,
    );
  });
  console.log("");
  for (const [label, values] of ratios) {
    const ratio = median(values);
    const verdict =
      label === "oversized"
        ? `goal < ${GOAL}×: ${met(ratio < GOAL)}`
        : "for reference: the per-minute count per address bounds this flood in production";
    console.log(
      `Tenant B's p50 under the ${label} flood: ${fixed(ratio, 2)}× its p50 without (median of ${values.length} rounds; ${verdict})`,
    );
  }
}
