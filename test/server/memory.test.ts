// HEAP_GROWING_PERCENT reaches V8: with the shipped old space (128 MiB), the same allocations run through
// far fewer full collections when the old generation may double between them than with V8's own factor.
// HEAP_YOUNG_GC_TASK reaches V8 too: without the task, a young generation of the same size is collected
// less often for the same allocations, spread over turns of the event loop as a server's are.
// And the GLIBC_TUNABLES npm start ships (package.json's config.glibc_tunables) makes the C library give
// freed blocks of 32 KiB and more back to the system, where its own threshold keeps them resident.
import { spawnSync } from "node:child_process";
import t from "tap";
import { shippedStart } from "../../scripts/shipped-start.ts";
import { SHIPPED_HEAP_YOUNG_GC_TASK } from "../../server/memory.ts";
import { serviceModule } from "../helpers/repository-copy.ts";

const MEMORY = serviceModule("server/memory.ts");
const SHIPPED_TUNABLES = shippedStart().glibcTunables;

/**
 * Runs `script` as an ES module in a fresh Node with `flags` and `env` (and PATH) and returns the JSON it
 * wrote to its standard output.
 */
function runScript<T>(flags: string[], script: string, env: Record<string, string> = {}): T {
  const { stdout, stderr, status } = spawnSync(process.execPath, [...flags, "--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  if (status !== 0) throw new Error(`the allocating process failed (${status}): ${stderr}`);
  return JSON.parse(stdout) as T;
}

/** Script text that counts the process's garbage collections of one kind (perf_hooks' kind constant). */
const countCollections = (kind: "NODE_PERFORMANCE_GC_MAJOR" | "NODE_PERFORMANCE_GC_MINOR") => `
    let collections = 0;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) if (entry.detail.kind === constants.${kind}) collections++;
    }).observe({ entryTypes: ["gc"] });
`;

/**
 * Full collections in a fresh process with the shipped old space, a young generation small enough that the
 * churn is promoted, a live set of some 30 MiB and the growing percent applied through server/memory.ts.
 */
function fullCollections(percent: number): number {
  const script = `
    import { applyHeapGrowth } from ${MEMORY};
    import { PerformanceObserver, constants } from "node:perf_hooks";
    applyHeapGrowth(${percent});
    ${countCollections("NODE_PERFORMANCE_GC_MAJOR")}
    const live = Array.from({ length: 300_000 }, (_, i) => ({ i, text: "live-" + i }));
    const ring = new Array(50_000);
    for (let i = 0; i < 2_000_000; i++) ring[i % ring.length] = { i, text: "churn-" + i };
    // GC entries arrive after the loop: read them on a later turn.
    setTimeout(() => process.stdout.write(JSON.stringify({ collections, live: live.length })), 100);
  `;
  return runScript<{ collections: number }>(["--max-old-space-size=128", "--max-semi-space-size=1"], script)
    .collections;
}

t.test("a growing percent of 100 makes V8 collect the old generation far less often than its own factor", async (t) => {
  const own = fullCollections(0);
  const doubling = fullCollections(100);
  t.ok(own >= 8, `V8's own factor: ${own} full collections (enough for the comparison to mean something)`);
  t.ok(doubling <= own * 0.6, `growing percent 100: ${doubling} full collections, against ${own}`);
});

/**
 * Young-generation collections in a fresh process whose 4 MiB semi-spaces take 600 MB of short-lived
 * objects, 150 KB a turn of the event loop, with V8's young-generation task set through server/memory.ts.
 */
function youngCollections(task: boolean): number {
  const script = `
    import { applyYoungGcTask } from ${MEMORY};
    import { PerformanceObserver, constants } from "node:perf_hooks";
    applyYoungGcTask(${task});
    ${countCollections("NODE_PERFORMANCE_GC_MINOR")}
    let turns = 0;
    let last;
    function turn() {
      for (let i = 0; i < 2000; i++) last = { i, text: "short-lived-" + i };
      if (++turns < 4000) setImmediate(turn);
      else setTimeout(() => process.stdout.write(JSON.stringify({ collections, last: last.i })), 100);
    }
    turn();
  `;
  return runScript<{ collections: number }>(["--min-semi-space-size=4", "--max-semi-space-size=4"], script).collections;
}

t.test("without the young-generation task, V8 collects the same young generation less often", async (t) => {
  t.equal(SHIPPED_HEAP_YOUNG_GC_TASK, false, "the service ships without the task");
  const own = youngCollections(true);
  const full = youngCollections(false);
  t.ok(own >= 50, `V8's own task: ${own} young collections (enough for the comparison to mean something)`);
  t.ok(full <= own * 0.9, `collected only when full: ${full} young collections, against ${own}`);
});

/**
 * MiB of resident memory a fresh process gets back after freeing 2,000 blocks of 40 KiB (Buffers, which
 * Node allocates with malloc), each followed by a small block that stays, so that the freed ones are never
 * at the top of the C library's heap.
 */
function freedMb(glibcTunables: string | undefined): number {
  const script = `
    const rss = () => process.memoryUsage.rss();
    let large = [];
    const kept = [];
    for (let i = 0; i < 2000; i++) {
      large.push(Buffer.allocUnsafeSlow(40 * 1024).fill(1));
      kept.push(Buffer.allocUnsafeSlow(200).fill(1));
    }
    const held = rss();
    large = null;
    globalThis.gc();
    // V8 may free array buffers' memory on a helper thread after the collection.
    setTimeout(() => {
      globalThis.gc();
      process.stdout.write(JSON.stringify({ freed: (held - rss()) / 2 ** 20, kept: kept.length }));
    }, 300);
  `;
  const env: Record<string, string> = glibcTunables === undefined ? {} : { GLIBC_TUNABLES: glibcTunables };
  return runScript<{ freed: number }>(["--expose-gc"], script, env).freed;
}

const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime;

t.test(
  "the shipped GLIBC_TUNABLES gives freed blocks of 32 KiB and more back to the system",
  { skip: glibc === undefined ? "the C library is not glibc" : false },
  async (t) => {
    t.match(SHIPPED_TUNABLES, /glibc\.malloc\.mmap_threshold=32768/, "npm start ships the 32 KiB threshold");
    const own = freedMb(undefined);
    const shipped = freedMb(SHIPPED_TUNABLES);
    t.ok(own < 30, `glibc's own threshold: ${own.toFixed(1)} MiB of about 78 MiB freed came back`);
    t.ok(shipped > 60, `the shipped setting: ${shipped.toFixed(1)} MiB came back`);
  },
);
