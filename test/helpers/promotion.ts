// How much of what a request handler allocates outlives the young generation: the handler runs in a
// process of its own under load from another, and V8's GC profiler counts what its scavenges copied into
// the old generation.
import { spawn } from "node:child_process";
import { runLoad } from "../../scripts/bench/common.ts";
import { ROOT } from "./repository-copy.ts";

export interface PromotionRun {
  /**
   * The body of an ES module that defines `handle(req, res)`, the request listener under test. It may import
   * the service's modules by file URL and the project's dependencies by name.
   */
  handler: string;
  /** Node's own arguments for the serving process (V8 flags). */
  nodeArguments?: string[];
  /** Headers every request carries. */
  headers?: Record<string, string>;
  /** The serving process's environment besides PATH. */
  env?: Record<string, string>;
}

/**
 * Serves 5 000 requests at 32 connections to warm up, then 5 000 more, and returns the share of the young
 * generation's bytes that the second 5 000's scavenges promoted to the old generation.
 */
export async function promotedShare(run: PromotionRun): Promise<number> {
  const script = `
    import http from "node:http";
    import v8 from "node:v8";
    ${run.handler}
    let profiler;
    const server = http.createServer((req, res) => {
      if (req.url === "/start") {
        profiler = new v8.GCProfiler();
        profiler.start();
        return res.end();
      }
      if (req.url === "/stop") {
        let allocated = 0;
        let promoted = 0;
        for (const gc of profiler.stop().statistics) {
          if (gc.gcType !== "Scavenge") continue;
          const used = (when, space) => gc[when].heapSpaceStatistics.find((s) => s.spaceName === space).spaceUsedSize;
          allocated += used("beforeGC", "new_space");
          promoted += used("afterGC", "old_space") - used("beforeGC", "old_space");
        }
        return res.end(JSON.stringify({ allocated, promoted }));
      }
      handle(req, res);
    });
    server.listen(0, "127.0.0.1", () => console.log(server.address().port));
    // Ends with the test's process, even one tap kills at its timeout before the test's finally runs.
    process.stdin.on("close", () => process.exit(0)).resume();
  `;
  const child = spawn(
    process.execPath,
    [
      ...(run.nodeArguments ?? []),
      "--max-semi-space-size=4",
      "--disable-warning=ExperimentalWarning",
      "--input-type=module",
      "-e",
      script,
    ],
    // No stream shared with the test's process: tap waits for its output to close, and an orphan holding it
    // would hold the whole run. Without npm test's compile cache: code loaded from it is collected otherwise,
    // and the Set's control case then promotes nothing.
    { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"], env: { ...run.env, PATH: process.env.PATH ?? "" } },
  );
  let errors = "";
  child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
  try {
    const port = await new Promise<string>((resolve, reject) => {
      child.stdout.once("data", (chunk: Buffer) => resolve(chunk.toString().trim()));
      child.once("exit", (code) => reject(new Error(`the server exited (${code}): ${errors}`)));
    });
    const base = `http://127.0.0.1:${port}`;
    const load = {
      url: `${base}/x`,
      method: "GET" as const,
      headers: run.headers ?? {},
      connections: 32,
      amount: 5_000,
    };
    await runLoad(load);
    await fetch(`${base}/start`);
    const figures = await runLoad(load);
    if (figures.non2xx !== 0) throw new Error(`${figures.non2xx} requests failed`);
    const { allocated, promoted } = (await (await fetch(`${base}/stop`)).json()) as {
      allocated: number;
      promoted: number;
    };
    if (allocated < 20 * 2 ** 20) throw new Error(`only ${allocated} bytes went through the young generation`);
    return promoted / allocated;
  } finally {
    child.kill();
  }
}
