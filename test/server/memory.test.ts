// HEAP_GROWING_PERCENT reaches V8: with the shipped old space (128 MiB), the same allocations run through
// far fewer full collections when the old generation may double between them than with V8's own factor.
import { spawnSync } from "node:child_process";
import path from "node:path";
import t from "tap";

const MEMORY = path.join(import.meta.dirname, "..", "..", "server", "memory.ts");

/**
 * Full collections in a fresh process with the shipped old space, a young generation small enough that the
 * churn is promoted, a live set of some 30 MiB and the growing percent applied through server/memory.ts.
 */
function fullCollections(percent: number): number {
  const script = `
    import { applyHeapGrowth } from ${JSON.stringify(MEMORY)};
    import { PerformanceObserver, constants } from "node:perf_hooks";
    applyHeapGrowth(${percent});
    let full = 0;
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) full++;
    });
    observer.observe({ entryTypes: ["gc"] });
    const live = Array.from({ length: 300_000 }, (_, i) => ({ i, text: "live-" + i }));
    const ring = new Array(50_000);
    for (let i = 0; i < 2_000_000; i++) ring[i % ring.length] = { i, text: "churn-" + i };
    // GC entries arrive after the loop: read them on a later turn.
    setTimeout(() => process.stdout.write(JSON.stringify({ full, live: live.length })), 100);
  `;
  const { stdout, stderr, status } = spawnSync(
    process.execPath,
    ["--max-old-space-size=128", "--max-semi-space-size=1", "--input-type=module", "-e", script],
    { encoding: "utf8", env: { PATH: process.env.PATH ?? "" } },
  );
  if (status !== 0) throw new Error(`the allocating process failed (${status}): ${stderr}`);
  return (JSON.parse(stdout) as { full: number }).full;
}

t.test("a growing percent of 100 makes V8 collect the old generation far less often than its own factor", async (t) => {
  const own = fullCollections(0);
  const doubling = fullCollections(100);
  t.ok(own >= 8, `V8's own factor: ${own} full collections (enough for the comparison to mean something)`);
  t.ok(doubling <= own * 0.6, `growing percent 100: ${doubling} full collections, against ${own}`);
});
