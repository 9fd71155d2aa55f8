// The benchmarks' CPU accounting (scripts/bench/cpu.ts): this process's CPU time, and a server's processes
// found from its postmaster.pid (the process it names and that process's children), read from /proc.
// Here this test process stands in for the postmaster, and a child that burns CPU for a backend.
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { once } from "node:events";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import { cpuSample, cpuText, meanCpu, perOperation } from "../../scripts/bench/cpu.ts";

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
