// Shared pieces of the benchmarks: command-line flags, the machine and its load, percentiles, and the
// alternating-rounds bookkeeping that turns a noisy machine's figures into ratios against a floor
// measured in the same run.
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Load } from "./load.ts";

/** `--name value` and `--name=value` flags; a bare `--name` is "true". */
export function flags(argv: string[] = process.argv.slice(2)): Map<string, string> {
  const found = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (!arg.startsWith("--")) continue;
    const equals = arg.indexOf("=");
    if (equals > 0) found.set(arg.slice(2, equals), arg.slice(equals + 1));
    else if (argv[i + 1] !== undefined && !String(argv[i + 1]).startsWith("--"))
      found.set(arg.slice(2), String(argv[++i]));
    else found.set(arg.slice(2), "true");
  }
  return found;
}

export function numberFlag(
  all: Map<string, string>,
  name: string,
  fallback: number,
  { zero = false }: { zero?: boolean } = {},
): number {
  const value = all.get(name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || (parsed === 0 && !zero))
    throw new Error(`--${name} must be a ${zero ? "non-negative" : "positive"} number, got ${value}`);
  return parsed;
}

export function listFlag(all: Map<string, string>, name: string, fallback: number[]): number[] {
  const value = all.get(name);
  if (value === undefined) return fallback;
  return value.split(",").map((part) => {
    const parsed = Number(part);
    if (!Number.isInteger(parsed) || parsed <= 0) throw new Error(`--${name} takes positive integers, got ${value}`);
    return parsed;
  });
}

/** `nproc`, the CPU model and memory, Node and the kernel. */
export function machine(): string {
  const cpuinfo = fs.readFileSync("/proc/cpuinfo", "utf8");
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? "unknown CPU";
  let nproc = String(os.availableParallelism());
  try {
    nproc = execFileSync("nproc", { encoding: "utf8" }).trim();
  } catch {
    // nproc missing: Node's count stands in.
  }
  return `nproc ${nproc}, ${model}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}, ${os.type()} ${os.release()}`;
}

/** When and on what a run ran: the date (UTC) and the checkout's commit, marked when it has uncommitted changes. */
export function revision(): string {
  const date = new Date().toISOString().slice(0, 16).replace("T", " ");
  try {
    const git = (...args: string[]) => execFileSync("git", args, { encoding: "utf8", stdio: "pipe" }).trim();
    const commit = git("rev-parse", "--short=12", "HEAD");
    return `${date} UTC, commit ${commit}${git("status", "--porcelain", "--untracked-files=no") ? " with uncommitted changes" : ""}`;
  } catch {
    return `${date} UTC, commit unknown (no git)`;
  }
}

/** `uptime` (load averages), to record the machine's load before and after a run. */
export function uptime(): string {
  try {
    return execFileSync("uptime", { encoding: "utf8" }).trim();
  } catch {
    return `load average: ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(", ")}`;
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

export function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

export function mean(values: number[]): number {
  return values.length === 0 ? Number.NaN : sum(values) / values.length;
}

/** The middle value, or the mean of the two middle values of an even count. */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export const fixed = (value: number, digits = 0): string => (Number.isFinite(value) ? value.toFixed(digits) : "–");

export function met(ok: boolean): string {
  return ok ? "met" : "NOT met";
}

export function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

export interface UntilOptions {
  /** How long to wait at most (default 180 s). */
  seconds?: number;
  /** How often to ask (default 2 ms). */
  intervalMs?: number;
  /** Asked about once a second: a reason to stop waiting at once (e.g. a delivery that failed). */
  failure?: () => Promise<string | undefined>;
}

/** Polls `probe` until it gives a value (anything but undefined and false), which it returns. */
export async function until<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  options: UntilOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.seconds ?? 180) * 1000;
  let nextCheck = Date.now() + 1000;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`benchmark gave up waiting for ${what}`);
    if (options.failure && Date.now() > nextCheck) {
      nextCheck = Date.now() + 1000;
      const reason = await options.failure();
      if (reason !== undefined) throw new Error(`benchmark stopped waiting for ${what}: ${reason}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 2));
  }
}

/** What the load generator reports for one load. */
export interface LoadFigures {
  /** Requests answered ÷ the load's wall-clock seconds. */
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
  /** Answers by HTTP status. */
  statusCodes: Record<string, number>;
}

/** Runs one load in the load generator's own process (scripts/bench/load.ts), so it shares no event loop. */
export async function runLoad(load: Load): Promise<LoadFigures> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [path.join(import.meta.dirname, "load.ts"), JSON.stringify(load)],
    { maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout) as LoadFigures;
}
