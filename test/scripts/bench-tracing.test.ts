// `npm run bench:intake -- --tracing` as a person runs it: the benchmark re-runs itself with the tracing SDK
// and an OTLP sink in a process of its own (scripts/bench/tracing.ts). It must report what the sink received
// and then exit: the sink's pipes and process once kept it running after its report.
import { spawn } from "node:child_process";
import { once } from "node:events";
import t from "tap";
import { ROOT } from "../helpers/repository-copy.ts";

t.test("bench:intake --tracing reports the sink's exports and exits", async (t) => {
  const bench = spawn(
    process.execPath,
    [
      "scripts/bench/intake.ts",
      // One scenario, the one checked below: each further one is a warm-up and a floor and a service segment more.
      "--only",
      "submit, no Idem",
      "--rounds",
      "1",
      "--connections",
      "8",
      "--duration",
      "1",
      "--tracing",
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  bench.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  bench.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  // The run itself takes about 10 s; a process still there long after its report is the failure.
  const timer = setTimeout(() => bench.kill("SIGKILL"), 150_000);
  const [code, signal] = (await once(bench, "exit")) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  t.equal(signal, null, "the benchmark exits on its own");
  t.equal(code, 0, output);
  const exports = /which received (\d+) exports/.exec(output);
  t.ok(exports && Number(exports[1]) > 0, "the sink received the spans' exports");
  t.match(output, /\| 8 \| submit, no Idempotency-Key \|/, "and the report has the scenario's row");
});
