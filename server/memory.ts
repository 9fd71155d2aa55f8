// The process's heap sizing as V8 applied it. `npm start` ships its sizing as NODE_OPTIONS (package.json's
// config.node_options; the image sets the same in its environment): docs/operating.md, "Memory".
import v8 from "node:v8";

/** The most the V8 heap may hold (old space plus the young generation), in MiB, as the start log shows it. */
export function heapLimitMb(): number {
  return Math.round(v8.getHeapStatistics().heap_size_limit / 2 ** 20);
}

/**
 * The share of the heap limit request bodies may take at once by default (LOAD_SHED_BODY_MEMORY_MB): a parsed
 * JSON body holds several times its bytes on the heap until its answer is sent (measured in
 * docs/operating.md, "Memory"), beside what the process keeps anyway.
 */
export const HEAP_SHARE_FOR_BODIES = 24;

/**
 * HEAP_GROWING_PERCENT's default: the old generation may double between full collections. V8's own factor
 * at the shipped 128 MiB old space is about 1.3, which made full collections most of the shipped sizing's
 * extra CPU per request (docs/performance.md, "Memory as shipped"). V8 caps the limit halfway from what the
 * last full collection kept to --max-old-space-size: with the API's 30-odd MiB kept and 128 MiB that is about
 * 80 MiB, which doubling already reaches, so a larger default would change nothing.
 */
export const SHIPPED_HEAP_GROWING_PERCENT = 100;

/**
 * Sets how far V8 lets the old generation grow past what its last full collection kept (V8's
 * --heap-growing-percent; 0 = V8's own factor). NODE_OPTIONS does not accept that flag, so it is set here,
 * at start, before the service's modules load; V8 reads it at every full collection.
 */
export function applyHeapGrowth(percent: number): void {
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/**
 * HEAP_YOUNG_GC_TASK's default: V8 collects the young generation only once it is full. V8's own default
 * (`--minor-gc-task`) posts the collection as a task once it is 80 % full, which in a busy server runs at
 * the next turn of the event loop: a fifth of each semi-space goes unused, so the same young generation is
 * collected about a quarter more often (docs/operating.md, "Memory").
 */
export const SHIPPED_HEAP_YOUNG_GC_TASK = false;

/**
 * Sets whether V8 schedules a young-generation collection as a task before the young generation is full
 * (V8's --minor-gc-task). NODE_OPTIONS does not accept that flag either; V8 reads it each time the young
 * generation passes its trigger, so setting it at start takes effect at once.
 */
export function applyYoungGcTask(task: boolean): void {
  v8.setFlagsFromString(task ? "--minor-gc-task" : "--no-minor-gc-task");
}
