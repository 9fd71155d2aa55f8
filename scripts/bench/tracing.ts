// The benchmarks' tracing on (npm run bench:intake -- --tracing re-runs itself with
// `node --import ./scripts/bench/tracing.ts`): an OTLP/HTTP sink in a process of its own, which only counts
// what arrives, and the tracing SDK pointed at it, started before the benchmark loads what it instruments
// (as app/main.ts does for the service). The OTEL_ settings of the environment apply (protocol, sampler,
// batch delay), except the endpoint, which is the sink's.
import { spawn } from "node:child_process";
import { loadConfig } from "../../foundation/config.ts";
import { startTracing } from "../../foundation/tracing-sdk.ts";
import { VERSION } from "../../foundation/version.ts";

const SINK = `
const http = require("node:http");
let requests = 0;
let bytes = 0;
const server = http.createServer((req, res) => {
  if (req.method === "GET") return res.end(JSON.stringify({ requests, bytes }));
  req.on("data", (chunk) => (bytes += chunk.length));
  req.on("end", () => {
    requests++;
    const json = String(req.headers["content-type"]).includes("json");
    res.writeHead(200, { "Content-Type": json ? "application/json" : "application/x-protobuf" }).end(json ? "{}" : "");
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));
process.on("disconnect", () => process.exit(0));
`;

const sink = spawn(process.execPath, ["-e", SINK], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
const port = await new Promise<string>((resolve, reject) => {
  if (sink.stdout === null) throw new Error("the sink has no stdout");
  sink.stdout.once("data", (chunk: Buffer) => resolve(chunk.toString("utf8").trim()));
  sink.once("error", reject);
});
process.on("exit", () => sink.kill());
delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
const settings = loadConfig(process.env).tracing;
if (settings === undefined) throw new Error("tracing stays off: OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none is set");
const running = await startTracing(settings, { name: "integrator-api", version: VERSION });

/**
 * Sends the spans still batched, then reads what the sink received and stops it: the sink's pipes and
 * process would otherwise keep the benchmark's process from exiting.
 */
export async function finishTracing(): Promise<{ requests: number; bytes: number; protocol: string; sampler: string }> {
  await running.shutdown(10_000);
  const response = await fetch(`http://127.0.0.1:${port}/`);
  const received = (await response.json()) as { requests: number; bytes: number };
  const exited = new Promise((resolve) => sink.once("exit", resolve));
  sink.disconnect();
  await exited;
  return { ...received, protocol: settings?.protocol ?? "", sampler: settings?.sampler ?? "" };
}
