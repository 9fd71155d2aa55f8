// The benchmarks' CPU accounting (scripts/bench/cpu.ts): this process's CPU time, and a server's processes
// found from its postmaster.pid (the process it names and that process's children), read from /proc.
// Here this test process stands in for the postmaster, and a child that burns CPU for a backend.
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { once } from "node:events";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import {
  cpuSample,
  cpuText,
  mainThreadCpuMs,
  meanCpu,
  perOperation,
  processCpuMs,
  threadCpu,
  threadKind,
} from "../../scripts/bench/cpu.ts";

const linux = process.platform === "linux";

/** Busy work until this process has spent `ms` of CPU time (not wall time: parallel test files share the CPUs). */
function burn(ms: number): void {
  const start = process.cpuUsage();
  for (;;) {
    const spent = process.cpuUsage(start);
    if ((spent.user + spent.system) / 1000 >= ms) return;
  }
}

t.test("this process's CPU time grows by the work it does", async (t) => {
  const before = cpuSample(undefined);
  burn(200);
  const after = cpuSample(undefined);
  const spent = after.nodeMs - before.nodeMs;
  t.ok(spent >= 200, `200 ms of CPU counted as ${spent.toFixed(0)} ms`);
  // The machine's busy time includes this process's (/proc/stat counts in clock ticks of 10 ms).
  if (linux) t.ok(after.machineMs - before.machineMs >= 180, "and in the machine's busy time");
  t.ok(Number.isNaN(after.postgresMs), "no server directory: the server's CPU is unknown, not 0");
  t.equal(cpuText(perOperation(before, after, 2)).split(" / ").length, 3);
});

t.test("a server's CPU is its postmaster's and its children's, counted through /proc", { skip: !linux }, async (t) => {
  const dir = tempDir(t, "bench-cpu-");
  // postmaster.pid's first line is the server's process id.
  fs.writeFileSync(path.join(dir, "postmaster.pid"), `${process.pid}\n${dir}\n`);
  // A child named with spaces and parentheses (the name field of /proc/<pid>/stat is free text) spends
  // 400 ms of CPU, then waits to be told to exit, so that its time is read while it is still a child.
  const child = spawn(
    process.execPath,
    [
      "-e",
      `process.title = "post (gres) x"; const s = process.cpuUsage(); while (process.cpuUsage(s).user + process.cpuUsage(s).system < 400000) {} process.stdout.write("done\\n"); process.stdin.resume();`,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  t.teardown(() => child.kill());
  const before = cpuSample(dir);
  t.ok(Number.isFinite(before.postgresMs) && Number.isFinite(before.machineMs), "read from /proc");
  await once(child.stdout, "data");
  const after = cpuSample(dir);
  const server = after.postgresMs - before.postgresMs;
  const own = after.nodeMs - before.nodeMs;
  t.ok(
    server - own >= 380,
    `the child's 400 ms are in the server's figure (${server.toFixed(0)} ms, this process ${own.toFixed(0)} ms)`,
  );
  t.ok(after.machineMs - before.machineMs >= 380, "and in the machine's busy time");
  child.stdin.end();
  await once(child, "exit");
});

t.test("per operation and means over segments", async (t) => {
  const per = perOperation(
    { nodeMs: 100, postgresMs: 50, machineMs: 300 },
    { nodeMs: 300, postgresMs: 150, machineMs: 700 },
    100,
  );
  t.same(per, { nodeMs: 2, postgresMs: 1, machineMs: 4 });
  t.same(meanCpu([per, { nodeMs: 4, postgresMs: 3, machineMs: 6 }]), { nodeMs: 3, postgresMs: 2, machineMs: 5 });
  t.equal(cpuText(meanCpu([])), "– / – / –");
  t.equal(cpuText(undefined), "–");
});

t.test("a Node process's CPU by kind of thread, and its minor page faults", { skip: !linux }, async (t) => {
  // A child whose event loop thread spends 300 ms of CPU and then touches 16 MiB of fresh memory page by
  // page, then waits to be told to exit: its figures are read while it still runs.
  const child = spawn(
    process.execPath,
    [
      "-e",
      `const s = process.cpuUsage(); while (process.cpuUsage(s).user + process.cpuUsage(s).system < 300000) {}
       process.stdout.write("burnt\\n");
       process.stdin.once("data", () => { const b = Buffer.allocUnsafeSlow(16 * 2 ** 20); for (let i = 0; i < b.length; i += 4096) b[i] = 1; process.stdout.write("touched\\n"); });`,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  t.teardown(() => child.kill());
  const pid = child.pid as number;
  await once(child.stdout, "data");
  const burnt = threadCpu(pid);
  if (!burnt) return t.fail("read from /proc");
  const loop = burnt.eventLoop.userMs + burnt.eventLoop.systemMs;
  t.ok(loop >= 290, `the 300 ms are the event loop thread's (${loop.toFixed(0)} ms)`);
  // Read a moment later: the child may have spent a tick since.
  t.ok(Math.abs(mainThreadCpuMs(pid) - loop) <= 20, "as mainThreadCpuMs reads it");
  const threads = loop + burnt.v8Helpers.userMs + burnt.v8Helpers.systemMs + burnt.other.userMs + burnt.other.systemMs;
  // The process's own figure is read a moment later, and /proc counts in ticks of 10 ms.
  t.ok(Math.abs(processCpuMs(pid) - threads) <= 30, `the threads add up to the process (${threads.toFixed(0)} ms)`);
  child.stdin.write("go\n");
  await once(child.stdout, "data");
  const touched = threadCpu(pid);
  // 4,096 pages of 4 KiB, or 8 transparent huge pages of 2 MiB where the kernel gives those.
  t.ok((touched?.minorFaults ?? 0) - burnt.minorFaults >= 8, "touching fresh memory counts minor faults");
  child.stdin.end();
  await once(child, "exit");
  t.equal(threadCpu(pid), undefined, "a process that is gone has no figures");
});

t.test("threads are sorted by kind from their ids and names", async (t) => {
  t.equal(threadKind(100, 100, "node"), "eventLoop", "the main thread, whatever its name");
  t.equal(threadKind(100, 101, "V8Worker"), "v8Helpers");
  t.equal(threadKind(100, 102, "libuv-worker"), "other");
  t.equal(threadKind(100, 103, "DelayedTaskSche"), "other");
});
