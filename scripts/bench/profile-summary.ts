// node scripts/bench/profile-summary.ts FILE.cpuprofile [--top N]
// Where a CPU profile's time went: self time by package (node_modules/<name>, node: internals, the
// project's own folders), then the N heaviest functions by self time. Idle and GC are listed apart.
import { readFile } from "node:fs/promises";
import type { CpuProfile } from "./profile.ts";

const [file, ...rest] = process.argv.slice(2);
if (!file) throw new Error("usage: profile-summary.ts FILE.cpuprofile [--top N]");
const top = rest[0] === "--top" ? Number(rest[1]) : 25;
const profile = JSON.parse(await readFile(file, "utf8")) as CpuProfile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfMicros = new Map<number, number>();
profile.samples.forEach((id, index) => {
  selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
});

function area(url: string, name: string): string {
  if (!url) return name.startsWith("(") ? name : "(native)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  if (url.startsWith("node:")) return `node:${url.slice(5).split("/")[0]}`;
  const own = /\/(server|handlers|db|worker|scripts|generated)\/(.*)$/.exec(url);
  return own ? `${own[1]}/${(own[2] as string).split("/")[0]}` : url;
}

const total = [...selfMicros.values()].reduce((sum, micros) => sum + micros, 0);
const busy = [...selfMicros.entries()]
  .filter(([id]) => byId.get(id)?.callFrame.functionName !== "(idle)")
  .reduce((sum, [, micros]) => sum + micros, 0);
const areas = new Map<string, number>();
const functions = new Map<string, number>();
for (const [id, micros] of selfMicros) {
  const node = byId.get(id);
  if (!node) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = area(url, functionName);
  areas.set(where, (areas.get(where) ?? 0) + micros);
  const label = `${functionName || "(anonymous)"} ${url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(server|handlers|db|worker|scripts)\//, "$1/")}:${lineNumber + 1}`;
  functions.set(label, (functions.get(label) ?? 0) + micros);
}
const share = (micros: number, of: number) => `${((100 * micros) / of).toFixed(1)} %`.padStart(7);
console.log(`${(total / 1e6).toFixed(1)} s sampled, ${share(busy, total)} busy; shares below are of the busy time`);
console.log("\nBy area (self time)");
for (const [name, micros] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  if (name === "(idle)") continue;
  console.log(`${share(micros, busy)}  ${name}`);
}
console.log(`\nTop ${top} functions (self time)`);
for (const [name, micros] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top + 1)) {
  if (name.startsWith("(idle)")) continue;
  console.log(`${share(micros, busy)}  ${name}`);
}
