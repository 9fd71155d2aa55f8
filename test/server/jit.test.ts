// TURBOFAN_INVOCATIONS reaches V8: a function that runs once per turn of the event loop, as the functions a
// request runs once do, is optimised by TurboFan within 2,000 runs at the shipped count, and not with V8's
// own (what V8 reports with --trace-opt; compiled on the main thread, so that how busy the machine is cannot
// delay it).
import { spawnSync } from "node:child_process";
import path from "node:path";
import t from "tap";
import { SHIPPED_TURBOFAN_INVOCATIONS } from "../../server/jit.ts";
import { loadConfig } from "../../server/config.ts";

const JIT = path.join(import.meta.dirname, "..", "..", "server", "jit.ts");

/** Whether V8 optimised `perRequest` with TurboFan within 2,000 runs, one per turn, after applying `count`. */
function optimisedWithin2000Runs(count: number): boolean {
  const script = `
    import { applyTurbofanInvocations } from ${JSON.stringify(JIT)};
    applyTurbofanInvocations(${count});
    let runs = 0;
    function perRequest(headers) {
      let length = 0;
      for (const name in headers) length += name.length + String(headers[name]).length;
      return length + runs;
    }
    function turn() {
      runs++;
      perRequest({ host: "localhost", accept: "application/json", "x-run": runs });
      if (runs < 2000) setImmediate(turn);
    }
    turn();
  `;
  const { stdout, stderr, status } = spawnSync(
    process.execPath,
    ["--trace-opt", "--no-concurrent-recompilation", "--input-type=module", "-e", script],
    {
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "" },
    },
  );
  if (status !== 0) throw new Error(`the process failed (${status}): ${stderr}`);
  return /completed compiling [^\n]*<JSFunction perRequest [^\n]*TURBOFAN/.test(stdout);
}

t.test("the shipped count has V8 optimise a once-per-turn function with TurboFan; V8's own does not yet", async (t) => {
  t.equal(loadConfig({}).turbofanInvocations, SHIPPED_TURBOFAN_INVOCATIONS, "the shipped count is the default");
  t.equal(SHIPPED_TURBOFAN_INVOCATIONS, 300);
  t.ok(optimisedWithin2000Runs(SHIPPED_TURBOFAN_INVOCATIONS), "optimised by TurboFan at 300");
  t.notOk(optimisedWithin2000Runs(0), "0 leaves V8's own count (3000): not yet optimised by TurboFan");
});
