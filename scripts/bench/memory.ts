// Memory as shipped (npm run bench:intake -- --memory): the API as `npm run start:api` runs it, a child
// process given package.json's
// config.node_options as NODE_OPTIONS, config.glibc_tunables as GLIBC_TUNABLES and HEAP_GROWING_PERCENT and
// HEAP_YOUNG_GC_TASK at their defaults, against the same API on V8's default heap sizing and the C library's
// own allocator settings (no NODE_OPTIONS, HEAP_GROWING_PERCENT=0: V8's own growing factor,
// HEAP_YOUNG_GC_TASK=true: V8's own young-generation task, no GLIBC_TUNABLES), both on one throwaway
// database. Each round sends each process the same mix of submits,
// keyed submits, batches and list pages, kind by kind, the two back to back (which goes first alternates).
// Reports each process's resident set after every round, its peak (the kernel's VmHWM) and, per kind of
// request, its CPU per request (the whole process's and its event loop thread's) and requests/s, each as
// the median over rounds of shipped ÷ defaults.
// Linux only (/proc).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { buildServices, migrateAll } from "../../app/lifecycle.ts";
import { createDatabase } from "../../db/database.ts";
import { createTenant } from "../../db/principals.ts";
import { loadConfig } from "../../server/config.ts";
import { createLogger } from "../../server/logger.ts";
import { freePort } from "../throwaway-postgres.ts";
import { fixed, log, mean, median, met, runLoad, until } from "./common.ts";
import type { Scenario } from "./load.ts";
import { mainThreadCpuMs, processCpuMs, threadCpu, type ThreadCpu } from "./cpu.ts";
import { BATCH_BODY, SUBMIT_BODY } from "./bodies.ts";
import { SHIPPED_HEAP_GROWING_PERCENT, SHIPPED_HEAP_YOUNG_GC_TASK } from "../../server/memory.ts";

const ROOT = path.join(import.meta.dirname, "..", "..");
const MAIN = path.join(ROOT, "app", "main.ts");
const RSS_GOAL_MB = 200;
/** The flood after the rounds: valid batches of about this many bytes each, from this many connections at once. */
const FLOOD_BODY_BYTES = 600_000;
const FLOOD_CONNECTIONS = 64;
const FLOOD_SECONDS = 10;
/**
 * Shipped ÷ defaults CPU per request at or below this counts as no loss. CPU per request is the figure that
 * counts on a shared machine: requests/s follow the CPU the process gets, which other work decides.
 */
const NO_LOSS = 1.05;

interface MemoryOptions {
  /** Requests each process answers over the whole run. */
  requests: number;
  rounds: number;
  connections: number;
  /** Compare these NODE_OPTIONS instead of the shipped ones. */
  nodeOptions?: string;
  /** Compare this GLIBC_TUNABLES instead of the shipped one ("" for none). */
  glibcTunables?: string;
  /** Compare this HEAP_GROWING_PERCENT instead of the shipped one. */
  heapGrowingPercent?: number;
  /** Compare this HEAP_YOUNG_GC_TASK instead of the shipped one. */
  youngGcTask?: boolean;
}

/** How a process's memory is sized: its NODE_OPTIONS, HEAP_GROWING_PERCENT, HEAP_YOUNG_GC_TASK and GLIBC_TUNABLES. */
interface Sizing {
  nodeOptions: string;
  /** The C library's allocator settings (GLIBC_TUNABLES), "" for its defaults. */
  glibcTunables: string;
  heapGrowingPercent: number;
  youngGcTask: boolean;
}

const sizingText = (sizing: Sizing) =>
  `${sizing.nodeOptions ? `\`${sizing.nodeOptions}\`` : "no NODE_OPTIONS"}, HEAP_GROWING_PERCENT ${sizing.heapGrowingPercent}, HEAP_YOUNG_GC_TASK ${sizing.youngGcTask}, ${sizing.glibcTunables ? `GLIBC_TUNABLES \`${sizing.glibcTunables}\`` : "no GLIBC_TUNABLES"}`;

interface Contender {
  label: string;
  sizing: Sizing;
  child: ChildProcess;
  url: string;
  /** Requests/s of each segment, by kind of request. */
  requestsPerSecond: Map<string, number[]>;
  /** The process's CPU ms per request in each segment, by kind of request. */
  cpuPerRequest: Map<string, number[]>;
  /** Its event loop thread's share of that (the rest is V8's and libuv's helper threads). */
  loopCpuPerRequest: Map<string, number[]>;
  rssAfterRound: number[];
  sent: number;
}

/** A /proc/<pid>/status field in MiB. */
function statusMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1];
  if (kib === undefined) throw new Error(`no ${field} for process ${pid}`);
  return Number(kib) / 1024;
}

async function startContender(label: string, sizing: Sizing, env: Record<string, string>): Promise<Contender> {
  const port = await freePort();
  // Logs at info, one line a request, as in production; into /dev/null.
  const child = spawn(process.execPath, [MAIN, "--role=api"], {
    env: {
      ...env,
      PORT: String(port),
      NODE_OPTIONS: sizing.nodeOptions,
      HEAP_GROWING_PERCENT: String(sizing.heapGrowingPercent),
      HEAP_YOUNG_GC_TASK: String(sizing.youngGcTask),
      ...(sizing.glibcTunables ? { GLIBC_TUNABLES: sizing.glibcTunables } : {}),
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  const started = until(
    async () => {
      if (child.exitCode !== null) throw new Error(`the ${label} API exited during start-up (${child.exitCode})`);
      return fetch(`${url}/v1/health`).then(
        (response) => response.ok,
        () => false,
      );
    },
    `the ${label} API to listen`,
    { seconds: 60, intervalMs: 100 },
  );
  await started.catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  return {
    label,
    sizing,
    child,
    url,
    requestsPerSecond: new Map(),
    cpuPerRequest: new Map(),
    loopCpuPerRequest: new Map(),
    rssAfterRound: [],
    sent: 0,
  };
}

/** One kind of request in a round's mix: its path on either process and the share of a round it takes. */
interface Kind {
  name: string;
  path: string;
  request: Omit<Scenario, "url">;
  share: number;
}

/** A round's mix, the same for both processes. */
function mix(auth: Record<string, string>): Kind[] {
  const post = (body: string) => ({ method: "POST" as const, headers: auth, body });
  return [
    { name: "submit", path: "/v1/intake/submit", request: post(SUBMIT_BODY), share: 0.45 },
    {
      name: "keyed submit",
      path: "/v1/intake/submit",
      request: { ...post(SUBMIT_BODY), uniqueIdempotencyKey: true },
      share: 0.25,
    },
    { name: "batch of 100", path: "/v1/intake/batch", request: post(BATCH_BODY), share: 0.05 },
    {
      name: "list page of 50",
      path: "/v1/intake/submissions?limit=50",
      request: { method: "GET", headers: auth },
      share: 0.25,
    },
  ];
}

/** A kind of request, sent to one of the processes. */
const scenarioFor = (contender: Contender, kind: Kind): Scenario => ({
  ...kind.request,
  url: `${contender.url}${kind.path}`,
});

/**
 * One kind of request, `count` of them, to one process: requests/s (the load's own clock), the process's
 * CPU ms per request and its event loop thread's.
 */
async function segment(
  contender: Contender,
  scenario: Scenario,
  count: number,
  connections: number,
): Promise<{ requestsPerSecond: number; cpuPerRequest: number; loopCpuPerRequest: number }> {
  const pid = contender.child.pid as number;
  const cpuBefore = processCpuMs(pid);
  const loopBefore = mainThreadCpuMs(pid);
  const figures = await runLoad({ ...scenario, connections, amount: count });
  if (figures.non2xx + figures.errors > 0)
    throw new Error(`${contender.label}: ${figures.non2xx} non-2xx answers, ${figures.errors} errors`);
  contender.sent += figures.total;
  return {
    requestsPerSecond: figures.requestsPerSecond,
    cpuPerRequest: (processCpuMs(pid) - cpuBefore) / figures.total,
    loopCpuPerRequest: (mainThreadCpuMs(pid) - loopBefore) / figures.total,
  };
}

const append = (figures: Map<string, number[]>, kind: string, value: number) =>
  figures.set(kind, [...(figures.get(kind) ?? []), value]);

/** Per kind of request, the median over rounds of one process's figure ÷ the other's in the same round. */
function ratios(mine: Map<string, number[]>, theirs: Map<string, number[]>): Map<string, number> {
  return new Map(
    [...mine].map(([kind, values]) => {
      const other = theirs.get(kind) ?? [];
      return [kind, median(values.map((value, index) => value / (other[index] ?? value)))] as const;
    }),
  );
}

/** Per request over the rounds: CPU ms of each kind of thread, user and system, and minor page faults. */
type ThreadSplit = Record<"loopUser" | "loopSystem" | "helpersUser" | "helpersSystem" | "other" | "faults", number>;

function threadSplit(
  before: ThreadCpu | undefined,
  after: ThreadCpu | undefined,
  requests: number,
): ThreadSplit | undefined {
  if (!before || !after || requests <= 0) return undefined;
  const per = (value: number) => value / requests;
  return {
    loopUser: per(after.eventLoop.userMs - before.eventLoop.userMs),
    loopSystem: per(after.eventLoop.systemMs - before.eventLoop.systemMs),
    helpersUser: per(after.v8Helpers.userMs - before.v8Helpers.userMs),
    helpersSystem: per(after.v8Helpers.systemMs - before.v8Helpers.systemMs),
    other: per(after.other.userMs + after.other.systemMs - before.other.userMs - before.other.systemMs),
    faults: per(after.minorFaults - before.minorFaults),
  };
}

/** The table of where each process's CPU went over the rounds (absent where /proc is not). */
function threadRows(label: string, mine: ThreadSplit | undefined, defaults: ThreadSplit | undefined): string[] {
  if (!mine || !defaults) return [];
  const keys = ["loopUser", "loopSystem", "helpersUser", "helpersSystem", "other", "faults"] as const;
  const row = (name: string, split: ThreadSplit) =>
    `| ${name} | ${keys.map((key) => fixed(split[key], key === "faults" ? 1 : 3)).join(" | ")} |`;
  return [
    "Where the CPU went, per request over all rounds (ms; minor page faults per request), by thread:",
    "",
    "| Process | event loop thread: user | system | V8's helper threads: user | system | other threads | minor page faults |",
    "|---|---:|---:|---:|---:|---:|---:|",
    row(label, mine),
    row("V8 defaults", defaults),
    `| ratio | ${keys.map((key) => fixed(mine[key] / defaults[key], 2)).join(" | ")} |`,
  ];
}

/** A valid batch of 100 items of about `bytes` bytes in all (their metadata pads them), in a file. */
function largeBatchFile(bytes: number): string {
  const items = Array.from({ length: 100 }, (_, i) => ({
    filename: `doc-${i}.pdf`,
    file_size: 1000 + i,
    mime_type: "application/pdf",
    item_metadata: Object.fromEntries(
      Array.from({ length: 40 }, (_, j) => [`key-${j}`, "v".repeat(bytes / 4000 - 12)]),
    ),
  }));
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "integrator-bench-")), "batch.json");
  fs.writeFileSync(file, JSON.stringify({ items, external_reference: "bench-flood" }));
  return file;
}

interface Flood {
  survived: boolean;
  statusCodes: Record<string, number>;
  errors: number;
  peakMb: number;
  afterwards: number | string;
}

/**
 * Large valid batches from many connections at once, as one tenant may send them: the process must stay up
 * (bodies beyond what it may hold at once are shed with 503) and answer a submit afterwards.
 */
async function flood(contender: Contender, auth: Record<string, string>): Promise<Flood> {
  const bodyFile = largeBatchFile(FLOOD_BODY_BYTES);
  try {
    const figures = await runLoad({
      url: `${contender.url}/v1/intake/batch`,
      method: "POST",
      headers: auth,
      bodyFile,
      connections: FLOOD_CONNECTIONS,
      duration: FLOOD_SECONDS,
    });
    const survived = contender.child.exitCode === null && contender.child.signalCode === null;
    const afterwards = await fetch(`${contender.url}/v1/intake/submit`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ filename: "after.pdf", file_size: 1, mime_type: "application/pdf" }),
    }).then(
      (response) => response.status,
      (error: unknown) => String(error),
    );
    return {
      survived,
      statusCodes: figures.statusCodes,
      errors: figures.errors,
      peakMb: survived ? statusMb(contender.child.pid as number, "VmHWM") : Number.NaN,
      afterwards,
    };
  } finally {
    fs.rmSync(path.dirname(bodyFile), { recursive: true, force: true });
  }
}

export async function memoryAsShipped(databaseUrl: string, options: MemoryOptions): Promise<string[]> {
  const shipped: Sizing = {
    nodeOptions: options.nodeOptions ?? "",
    glibcTunables: options.glibcTunables ?? "",
    heapGrowingPercent: options.heapGrowingPercent ?? SHIPPED_HEAP_GROWING_PERCENT,
    youngGcTask: options.youngGcTask ?? SHIPPED_HEAP_YOUNG_GC_TASK,
  };
  const tried =
    options.nodeOptions !== undefined ||
    options.heapGrowingPercent !== undefined ||
    options.youngGcTask !== undefined ||
    options.glibcTunables !== undefined;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: os.tmpdir(),
    NODE_ENV: "production",
    DATABASE_URL: databaseUrl,
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    PUBLIC_BASE_URL: "https://integrator.bench.example",
    LOG_LEVEL: "info",
    // One principal sends every request: its rate limit is lifted, and nothing is shed.
    RATE_LIMIT_PER_MINUTE: "1000000",
    LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
    LOAD_SHED_DB_PENDING_ACQUIRES: "0",
  };
  // The tenant and its token, made here with the same key and database the two processes use.
  const config = loadConfig(env);
  const db = createDatabase(databaseUrl, config.dbPoolMax);
  let token: string;
  try {
    await migrateAll(db, databaseUrl);
    const services = await buildServices(
      config,
      db,
      createLogger({ level: "error", destination: pino.destination({ dest: "/dev/null", sync: true }) }),
    );
    const tenant = await createTenant(db, "Bench tenant");
    ({ token } = await services.tokens.issue({
      subject: "bench",
      tenantId: tenant.id,
      roles: ["client_admin"],
      expiresInSeconds: 3600,
    }));
  } finally {
    await db.destroy();
  }
  const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
  const contenders = [
    await startContender(tried ? "tried" : "shipped", shipped, env),
    await startContender(
      "V8 defaults",
      { nodeOptions: "", heapGrowingPercent: 0, youngGcTask: true, glibcTunables: "" },
      env,
    ),
  ];
  try {
    const perRound = Math.ceil(options.requests / options.rounds);
    // Warm-up (its memory counts, as a start's would): the JIT and the pools.
    const kinds = mix(auth);
    for (const contender of contenders) await segment(contender, scenarioFor(contender, kinds[0] as Kind), 500, 8);
    const [mine, defaults] = contenders as [Contender, Contender];
    const threadsBefore = contenders.map((c) => ({ cpu: threadCpu(c.child.pid as number), sent: c.sent }));
    for (let index = 0; index < options.rounds; index++) {
      // Kind by kind, the two back to back (which goes first alternates), so each pair meets the same load.
      for (const kind of kinds) {
        const count = Math.max(options.connections, Math.round(perRound * kind.share));
        const order = index % 2 === 0 ? contenders : [...contenders].reverse();
        for (const contender of order) {
          const figures = await segment(contender, scenarioFor(contender, kind), count, options.connections);
          append(contender.requestsPerSecond, kind.name, figures.requestsPerSecond);
          append(contender.cpuPerRequest, kind.name, figures.cpuPerRequest);
          append(contender.loopCpuPerRequest, kind.name, figures.loopCpuPerRequest);
        }
      }
      for (const contender of contenders)
        contender.rssAfterRound.push(statusMb(contender.child.pid as number, "VmRSS"));
      log(
        `round ${index + 1}: ${contenders.map((c) => `${c.label} RSS ${fixed(c.rssAfterRound[index] ?? Number.NaN)} MiB`).join("; ")}`,
      );
    }
    const [mySplit, theirSplit] = contenders.map((c, index) => {
      const before = threadsBefore[index];
      return threadSplit(before?.cpu, threadCpu(c.child.pid as number), c.sent - (before?.sent ?? 0));
    }) as [ThreadSplit | undefined, ThreadSplit | undefined];
    const speed = ratios(mine.requestsPerSecond, defaults.requestsPerSecond);
    const cost = ratios(mine.cpuPerRequest, defaults.cpuPerRequest);
    const costRatio = median([...cost.values()]);
    const loopCost = ratios(mine.loopCpuPerRequest, defaults.loopCpuPerRequest);
    // The peaks of the rounds, before the flood raises them.
    const peaks = new Map(contenders.map((c) => [c, statusMb(c.child.pid as number, "VmHWM")]));
    const peak = (c: Contender) => peaks.get(c) as number;
    log(
      `flood: ${FLOOD_CONNECTIONS} connections of ${FLOOD_BODY_BYTES}-byte batches for ${FLOOD_SECONDS} s to the ${mine.label} API`,
    );
    const flooded = await flood(mine, auth);
    const codes = Object.entries(flooded.statusCodes)
      .map(([code, count]) => `${count} × ${code}`)
      .join(", ");
    const rows = contenders.map(
      (c) =>
        `| ${c.label} | ${sizingText(c.sizing)} | ${c.sent} | ${c.rssAfterRound.map((mb) => fixed(mb)).join(" → ")} | ${fixed(peak(c))} |`,
    );
    return [
      `Memory as shipped: the API as npm run start:api runs it (its own process, NODE_ENV=production, request logs at info to /dev/null) with the shipped heap sizing against V8's defaults, one throwaway database; ${options.rounds} rounds of ${perRound} requests each (${kinds.map((kind) => `${kind.share * 100} % ${kind.name}`).join(", ")}), ${options.connections} connections, the two alternating.`,
      "",
      "| Process | sizing | requests | RSS after each round, MiB | peak RSS (VmHWM), MiB |",
      "|---|---|---:|---|---:|",
      ...rows,
      "",
      `| Requests | ${mine.label} CPU ms per request | defaults CPU ms per request | ratio | event loop thread: ${mine.label} ms | defaults ms | ratio | ${mine.label} req/s | defaults req/s | ratio |`,
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...[...cost].map(
        ([kind, value]) =>
          `| ${kind} | ${fixed(mean(mine.cpuPerRequest.get(kind) ?? []), 3)} | ${fixed(mean(defaults.cpuPerRequest.get(kind) ?? []), 3)} | ${fixed(value, 2)} | ${fixed(mean(mine.loopCpuPerRequest.get(kind) ?? []), 3)} | ${fixed(mean(defaults.loopCpuPerRequest.get(kind) ?? []), 3)} | ${fixed(loopCost.get(kind) ?? Number.NaN, 2)} | ${fixed(mean(mine.requestsPerSecond.get(kind) ?? []))} | ${fixed(mean(defaults.requestsPerSecond.get(kind) ?? []))} | ${fixed(speed.get(kind) ?? Number.NaN, 2)} |`,
      ),
      "",
      `CPU ms per request: the API process's own user + system time over a segment ÷ its requests (means over rounds); each ratio is the median over rounds of the pair measured back to back (median of the kinds: ${fixed(costRatio, 2)} for the process, ${fixed(median([...loopCost.values()]), 2)} for its event loop thread). The event loop thread's CPU per request bounds the requests/s one process can answer; the rest of the process's is V8's helper threads (concurrent marking, parallel scavenges, compilation) and libuv's, which take another CPU. Requests/s follow the CPU the process got, which the machine's other work decides, and with one load generator for ${options.connections} connections they may be the generator's own limit; CPU per request is neither.`,
      "",
      ...threadRows(mine.label, mySplit, theirSplit),
      "",
      "| Goal | Measured | |",
      "|---|---:|---|",
      `| ${mine.label} peak RSS ≤ ${RSS_GOAL_MB} MiB | ${fixed(peak(mine))} MiB | ${met(peak(mine) <= RSS_GOAL_MB)} |`,
      `| no throughput loss: ${mine.label} ÷ defaults CPU per request ≤ ${NO_LOSS} (median of the kinds' ratios) | ${fixed(costRatio, 2)} | ${met(costRatio <= NO_LOSS)} |`,
      `| ${mine.label} survives ${FLOOD_CONNECTIONS} connections of valid ${FLOOD_BODY_BYTES}-byte batches for ${FLOOD_SECONDS} s and then answers a submit 201 | ${flooded.survived ? "up" : "stopped"}: ${codes || "no answers"}, ${flooded.errors} errors or timeouts; peak RSS ${fixed(flooded.peakMb)} MiB; afterwards ${flooded.afterwards} | ${met(flooded.survived && flooded.afterwards === 201)} |`,
    ];
  } finally {
    for (const contender of contenders) {
      contender.child.kill("SIGTERM");
      await new Promise((resolve) =>
        contender.child.exitCode !== null ? resolve(undefined) : contender.child.once("exit", resolve),
      );
    }
  }
}
