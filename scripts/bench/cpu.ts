// CPU time spent per operation, by process, over a benchmark segment: this Node process (the service or
// floor it serves; the worker and receiver in bench:webhooks) and the embedded PostgreSQL (its postmaster
// and every backend, read from /proc), against the time the machine's CPUs were busy in all. On a
// machine with two CPUs shared by the load generator, PostgreSQL and the server, a segment's throughput
// follows from these: when one process is saturated, operations/s cannot exceed its CPU seconds per
// second divided by its CPU per operation. Linux only; elsewhere the PostgreSQL and machine figures are
// missing (NaN) and the Node figure remains.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export interface CpuSample {
  /** This process, user + system, ms. */
  nodeMs: number;
  /** The PostgreSQL server's processes, ms (NaN when unknown). */
  postgresMs: number;
  /** All CPUs' busy time (everything but idle and iowait), ms, from /proc/stat (NaN when unknown). */
  machineMs: number;
}

/** CPU per operation over a segment, ms. */
export type CpuPerOperation = CpuSample;

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** What a stat file of /proc says of a process or thread: CPU in clock ticks, its parent and its minor faults. */
interface Stat {
  name: string;
  parent: number;
  userTicks: number;
  systemTicks: number;
  /** utime + stime. */
  ticks: number;
  minorFaults: number;
}

/**
 * A stat file of /proc (a process's, or one of its threads' under task/); undefined when it is gone.
 * The name, in parentheses, may itself hold spaces and parentheses: the fields are read after the last ")".
 */
function readStat(file: string): Stat | undefined {
  try {
    const stat = fs.readFileSync(file, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // state is field 3 of stat(5), so field n is fields[n - 3]: ppid 4, minflt 10, utime 14, stime 15.
    const userTicks = Number(fields[11]);
    const systemTicks = Number(fields[12]);
    return {
      name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
      parent: Number(fields[1]),
      userTicks,
      systemTicks,
      ticks: userTicks + systemTicks,
      minorFaults: Number(fields[7]),
    };
  } catch {
    return undefined;
  }
}

const processStat = (pid: number) => readStat(`/proc/${pid}/stat`);

/** Clock ticks as ms; NaN for a process or thread that is gone. */
function ticksMs(ticks: number | undefined): number {
  return ticks === undefined ? Number.NaN : (ticks * 1000) / clockTicks();
}

/** CPU time (user + system) one process has used so far, ms; NaN when it is gone. */
export function processCpuMs(pid: number): number {
  return ticksMs(processStat(pid)?.ticks);
}

/**
 * CPU time (user + system) of a process's main thread so far, ms (NaN when it is gone): in Node, the
 * event loop's thread, whose CPU per request bounds the requests/s one process can answer; the rest of
 * processCpuMs is V8's helper threads (concurrent marking, parallel scavenges, compilation) and libuv's.
 */
export function mainThreadCpuMs(pid: number): number {
  return ticksMs(readStat(`/proc/${pid}/task/${pid}/stat`)?.ticks);
}

/** User and system CPU time, ms. */
export interface UserSystemMs {
  userMs: number;
  systemMs: number;
}

/**
 * Where a Node process's CPU time went so far, by kind of thread, and its minor page faults. Node names
 * its threads: the main thread runs the event loop; V8's platform workers ("V8Worker") do concurrent
 * marking, parallel scavenges and background compilation; the rest (libuv's pool, the inspector's, the
 * delayed-task scheduler) are "other". Undefined when the process is gone (or /proc is missing).
 */
export interface ThreadCpu {
  eventLoop: UserSystemMs;
  v8Helpers: UserSystemMs;
  other: UserSystemMs;
  minorFaults: number;
}

/** The kind of a Node process's thread, from its id and name. */
export function threadKind(pid: number, tid: number, name: string): keyof Omit<ThreadCpu, "minorFaults"> {
  if (tid === pid) return "eventLoop";
  return name.startsWith("V8Worker") ? "v8Helpers" : "other";
}

export function threadCpu(pid: number): ThreadCpu | undefined {
  const whole = processStat(pid);
  if (!whole) return undefined;
  const zero = () => ({ userMs: 0, systemMs: 0 });
  const found: ThreadCpu = { eventLoop: zero(), v8Helpers: zero(), other: zero(), minorFaults: whole.minorFaults };
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  for (const tid of tids) {
    const thread = readStat(`/proc/${pid}/task/${tid}/stat`);
    if (!thread) continue;
    const kind = found[threadKind(pid, Number(tid), thread.name)];
    kind.userMs += ticksMs(thread.userTicks);
    kind.systemMs += ticksMs(thread.systemTicks);
  }
  return found;
}

function postgresTicks(databaseDir: string | undefined): number {
  if (databaseDir === undefined) return Number.NaN;
  let postmaster: number;
  try {
    postmaster = Number(fs.readFileSync(path.join(databaseDir, "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return Number.NaN;
  }
  let total = processStat(postmaster)?.ticks ?? Number.NaN;
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const found = processStat(Number(entry));
    if (found?.parent === postmaster) total += found.ticks;
  }
  return total;
}

function machineTicks(): number {
  try {
    const cpu = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    // user nice system idle iowait irq softirq steal …: busy is all but idle (3) and iowait (4); guest time is within user.
    return cpu.slice(0, 8).reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value), 0);
  } catch {
    return Number.NaN;
  }
}

/** Reads the CPU counters; `databaseDir` is the embedded cluster's directory (undefined: PostgreSQL not counted). */
export function cpuSample(databaseDir: string | undefined): CpuSample {
  const usage = process.cpuUsage();
  const msPerTick = 1000 / clockTicks();
  return {
    nodeMs: (usage.user + usage.system) / 1000,
    postgresMs: postgresTicks(databaseDir) * msPerTick,
    machineMs: machineTicks() * msPerTick,
  };
}

/** The CPU spent between two samples, per operation. */
export function perOperation(before: CpuSample, after: CpuSample, operations: number): CpuPerOperation {
  const per = (key: keyof CpuSample) => (after[key] - before[key]) / operations;
  return { nodeMs: per("nodeMs"), postgresMs: per("postgresMs"), machineMs: per("machineMs") };
}

/** Starts counting: the function returned gives the CPU spent since, per operation, for `operations`. */
export function cpuMeter(databaseDir: string | undefined): (operations: number) => CpuPerOperation {
  const before = cpuSample(databaseDir);
  return (operations) => perOperation(before, cpuSample(databaseDir), operations);
}

/** The mean of each figure over segments (NaN where a segment lacks it). */
export function meanCpu(segments: (CpuPerOperation | undefined)[]): CpuPerOperation {
  const of = (key: keyof CpuPerOperation) =>
    segments.length === 0
      ? Number.NaN
      : segments.reduce((total, cpu) => total + (cpu?.[key] ?? Number.NaN), 0) / segments.length;
  return { nodeMs: of("nodeMs"), postgresMs: of("postgresMs"), machineMs: of("machineMs") };
}

/** "0.61 / 0.40 / 1.52": Node / PostgreSQL / machine, ms per operation. */
export function cpuText(cpu: CpuPerOperation | undefined): string {
  if (!cpu) return "–";
  const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : "–");
  return `${ms(cpu.nodeMs)} / ${ms(cpu.postgresMs)} / ${ms(cpu.machineMs)}`;
}
