// The API's memory under Node's defaults (npm run bench:intake -- --memory): the API as `npm run start:api`
// runs it (`node app/main.ts --role=api`, no flags, NODE_ENV=production, request logs at info to /dev/null)
// in a child process on a throwaway database. It answers N requests of the mix (submits, keyed submits,
// batches and list pages), then N more: its resident set after N and after 2N must have grown by at most
// GROWTH_GOAL_PERCENT and stay under RSS_GOAL_MB. The resident set of a collected heap is a sawtooth, so
// "after N" is the peak over the last round before N (the kernel's VmHWM, reset as that round starts): the
// top of the sawtooth, not wherever one reading happens to land on it. Then a flood of large valid batches
// from many connections at once, which load shedding must hold: the process stays up and answers a submit
// afterwards. Linux only (/proc).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { buildServices, migrateAll } from "../../app/services.ts";
import { createDatabase } from "../../db/database.ts";
import { createTenant } from "../../db/principals.ts";
import { loadConfig } from "../../foundation/config.ts";
import { createLogger } from "../../foundation/logger.ts";
import { freePort } from "../throwaway-postgres.ts";
import { fixed, log, met, runLoad, until } from "./common.ts";
import type { Scenario } from "./load.ts";
import { mainThreadCpuMs, processCpuMs } from "./cpu.ts";
import { BATCH_BODY, SUBMIT_BODY } from "./bodies.ts";

const MAIN = path.join(import.meta.dirname, "..", "..", "app", "main.ts");
/** The resident set after 2N requests stays under this (MB, 10^6 bytes). */
const RSS_GOAL_MB = 400;
/** …and has grown by at most this since N requests (%). */
const GROWTH_GOAL_PERCENT = 10;
/** The flood after the mix: valid batches of about this many bytes each, from this many connections at once. */
const FLOOD_BODY_BYTES = 600_000;
const FLOOD_CONNECTIONS = 64;
const FLOOD_SECONDS = 10;

interface MemoryOptions {
  /** N: requests of the mix before the first reading; as many again before the second. */
  requests: number;
  /** Each half is sent in this many rounds of the mix (the resident set is logged after each). */
  rounds: number;
  connections: number;
}

/** A /proc/<pid>/status field in MB (10^6 bytes). */
function statusMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1];
  if (kib === undefined) throw new Error(`no ${field} for process ${pid}`);
  return (Number(kib) * 1024) / 1e6;
}

/** Resets a process's VmHWM to its present resident set (Linux's clear_refs), so that it reads the peak from now on. */
function resetPeak(pid: number): void {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

interface Api {
  child: ChildProcess;
  url: string;
  metricsUrl: string;
}

/** What the API's /metrics says it holds now, MB: the V8 heap's used and total size, and the replay memory. */
async function heldMb(api: Api): Promise<{ used: number; total: number; replays: number }> {
  const text = await (await fetch(`${api.metricsUrl}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1]) / 1e6;
  return {
    used: value("nodejs_heap_size_used_bytes"),
    total: value("nodejs_heap_size_total_bytes"),
    replays: value("integrator_idempotency_memory_bytes"),
  };
}

async function startApi(env: Record<string, string>): Promise<Api> {
  const port = await freePort();
  const metricsPort = await freePort();
  const child = spawn(process.execPath, [MAIN, "--role=api"], {
    env: { ...env, PORT: String(port), METRICS_PORT: String(metricsPort), METRICS_HOST: "127.0.0.1" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`the API exited during start-up (${child.exitCode})`);
      return fetch(`${url}/v1/health`).then(
        (response) => response.ok,
        () => false,
      );
    },
    "the API to listen",
    { seconds: 60, intervalMs: 100 },
  ).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  return { child, url, metricsUrl: `http://127.0.0.1:${metricsPort}` };
}

/** One kind of request in the mix and the share of a round it takes. */
interface Kind {
  name: string;
  path: string;
  request: Omit<Scenario, "url">;
  share: number;
}

/** The mix of bench:intake's service scenarios. */
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

/**
 * One half (N requests): its wall-clock requests/s and the API's CPU ms per request (whole process, event
 * loop thread); then the resident set's peak over the half's last round and its reading at the end, and the
 * V8 heap and the replay memory (API_IDEMPOTENCY_MEMORY_MB, which keyed submits fill) at the end.
 */
interface Half {
  requests: number;
  requestsPerSecond: number;
  cpuPerRequest: number;
  loopCpuPerRequest: number;
  peakMb: number;
  rssMb: number;
  held: { used: number; total: number; replays: number };
}

/** `requests` requests of the mix in `rounds` rounds, kind by kind, each answered 2xx. */
async function half(
  api: Api,
  kinds: Kind[],
  requests: number,
  rounds: number,
  connections: number,
  label: string,
): Promise<Half> {
  const pid = api.child.pid as number;
  const cpuBefore = processCpuMs(pid);
  const loopBefore = mainThreadCpuMs(pid);
  const started = performance.now();
  let sent = 0;
  for (let round = 1; round <= rounds; round++) {
    if (round === rounds) resetPeak(pid);
    for (const kind of kinds) {
      const amount = Math.max(connections, Math.round((requests / rounds) * kind.share));
      const figures = await runLoad({ ...kind.request, url: `${api.url}${kind.path}`, connections, amount });
      if (figures.non2xx + figures.errors > 0)
        throw new Error(`${kind.name}: ${figures.non2xx} non-2xx answers, ${figures.errors} errors`);
      sent += figures.total;
    }
    log(`${label}, round ${round}/${rounds}: ${sent} requests, RSS ${fixed(statusMb(pid, "VmRSS"))} MB`);
  }
  return {
    requests: sent,
    requestsPerSecond: sent / ((performance.now() - started) / 1000),
    cpuPerRequest: (processCpuMs(pid) - cpuBefore) / sent,
    loopCpuPerRequest: (mainThreadCpuMs(pid) - loopBefore) / sent,
    peakMb: statusMb(pid, "VmHWM"),
    rssMb: statusMb(pid, "VmRSS"),
    held: await heldMb(api),
  };
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
async function flood(api: Api, auth: Record<string, string>): Promise<Flood> {
  const bodyFile = largeBatchFile(FLOOD_BODY_BYTES);
  resetPeak(api.child.pid as number);
  try {
    const figures = await runLoad({
      url: `${api.url}/v1/intake/batch`,
      method: "POST",
      headers: auth,
      bodyFile,
      connections: FLOOD_CONNECTIONS,
      duration: FLOOD_SECONDS,
    });
    const survived = api.child.exitCode === null && api.child.signalCode === null;
    const afterwards = await fetch(`${api.url}/v1/intake/submit`, {
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
      peakMb: survived ? statusMb(api.child.pid as number, "VmHWM") : Number.NaN,
      afterwards,
    };
  } finally {
    fs.rmSync(path.dirname(bodyFile), { recursive: true, force: true });
  }
}

export async function memoryUnderDefaults(databaseUrl: string, options: MemoryOptions): Promise<string[]> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: os.tmpdir(),
    NODE_ENV: "production",
    DATABASE_URL: databaseUrl,
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    PUBLIC_BASE_URL: "https://integrator.bench.example",
    LOG_LEVEL: "info",
    // One principal sends every request: its rate limit is lifted, and the mix is never shed.
    RATE_LIMIT_PER_MINUTE: "1000000",
    LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
    LOAD_SHED_DB_PENDING_ACQUIRES: "0",
  };
  // The tenant and its token, made here with the same key and database the API uses.
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
  const kinds = mix(auth);
  const api = await startApi(env);
  try {
    const { requests, rounds, connections } = options;
    // The memory of the start and of the warm-up counts, as in any process that has served for a while.
    const first = await half(api, kinds, requests, rounds, connections, "first N");
    const second = await half(api, kinds, requests, rounds, connections, "second N");
    const growth = ((second.peakMb - first.peakMb) / first.peakMb) * 100;
    log(`flood: ${FLOOD_CONNECTIONS} connections of ${FLOOD_BODY_BYTES}-byte batches for ${FLOOD_SECONDS} s`);
    const flooded = await flood(api, auth);
    const codes = Object.entries(flooded.statusCodes)
      .map(([code, count]) => `${count} × ${code}`)
      .join(", ");
    const row = (name: string, h: Half, total: number) =>
      `| ${name} | ${total} | ${fixed(h.peakMb)} | ${fixed(h.rssMb)} | ${fixed(h.held.used)} / ${fixed(h.held.total)} | ${fixed(h.held.replays, 1)} | ${fixed(h.requestsPerSecond)} | ${fixed(h.cpuPerRequest, 3)} | ${fixed(h.loopCpuPerRequest, 3)} |`;
    return [
      `Memory under Node's defaults: the API as npm run start:api runs it (node app/main.ts --role=api, no flags; NODE_ENV=production, request logs at info to /dev/null), one throwaway database; N = ${requests} requests of the mix (${kinds.map((kind) => `${kind.share * 100} % ${kind.name}`).join(", ")}) in ${rounds} rounds, ${connections} connections, then N more.`,
      "",
      "| After | requests | RSS peak over the last round, MB | RSS at the end, MB | V8 heap used / total, MB | replay memory, MB | requests/s | CPU ms per request | event loop thread, ms |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
      row("N", first, first.requests),
      row("2N", second, first.requests + second.requests),
      "",
      "Requests/s and CPU per request are each half's own: the 2N row's are those of the second N requests.",
      "",
      "| Goal | Measured | |",
      "|---|---:|---|",
      `| RSS grows by at most ${GROWTH_GOAL_PERCENT} % from N to 2N (peaks over the last round) | ${fixed(first.peakMb)} → ${fixed(second.peakMb)} MB: ${growth >= 0 ? "+" : ""}${fixed(growth, 1)} % | ${met(growth <= GROWTH_GOAL_PERCENT)} |`,
      `| RSS after 2N under ${RSS_GOAL_MB} MB | ${fixed(second.peakMb)} MB | ${met(second.peakMb < RSS_GOAL_MB)} |`,
      `| ${FLOOD_CONNECTIONS} connections of valid ${FLOOD_BODY_BYTES}-byte batches for ${FLOOD_SECONDS} s are held: the API stays up (what it cannot hold at once is shed with 503) and then answers a submit 201 | ${flooded.survived ? "up" : "stopped"}: ${codes || "no answers"}, ${flooded.errors} errors or timeouts; peak RSS during the flood ${fixed(flooded.peakMb)} MB; afterwards ${flooded.afterwards} | ${met(flooded.survived && flooded.afterwards === 201)} |`,
    ];
  } finally {
    api.child.kill("SIGTERM");
    await new Promise((resolve) =>
      api.child.exitCode !== null ? resolve(undefined) : api.child.once("exit", resolve),
    );
  }
}
