// Starts the real `node app/main.ts` as a child process and waits for its "listening" log line (a
// worker-only process: its "running" line).
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import os from "node:os";
import path from "node:path";
import type { Test } from "tap";
import { waitFor } from "./wait.ts";

const MAIN = path.join(import.meta.dirname, "..", "..", "app", "main.ts");

export interface MainProcess {
  child: ChildProcessWithoutNullStreams;
  /** The API's port; 0 for a process without the API (`--role=worker`). */
  port: number;
  stdout: () => string;
  /** The JSON log lines written so far. */
  logLines: () => Record<string, unknown>[];
  /** How the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface MainProcessOptions {
  /** The app/main.ts to run (default this checkout's; another release's checkout has its own). */
  main?: string;
  /** How long start-up may take (default 60 s). */
  seconds?: number;
  /** The command-line arguments (default `--role=api`; none runs every role). */
  args?: string[];
  /** What stops a process still running when the test ends (default SIGTERM). */
  teardownSignal?: NodeJS.Signals;
}

/**
 * The environment of a process a test starts: PATH, HOME, npm test's compile cache (the child loads the
 * modules the test processes compiled already) and `env`; nothing else of the test's own environment.
 */
export function processEnv(env: Record<string, string> = {}): Record<string, string> {
  const cache = process.env.NODE_COMPILE_CACHE;
  return { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), ...(cache ? { NODE_COMPILE_CACHE: cache } : {}), ...env };
}

export async function startMainProcess(
  t: Test,
  env: Record<string, string>,
  options: MainProcessOptions = {},
): Promise<MainProcess> {
  const seconds = options.seconds ?? 60;
  // Load shedding stays off: on a machine busy with other tests the event loop can lag past its threshold.
  const child = spawn(process.execPath, [options.main ?? MAIN, ...(options.args ?? ["--role=api"])], {
    env: processEnv({ LOAD_SHED_EVENT_LOOP_DELAY_MS: "0", ...env }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
  let gone = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  void exited.then(() => (gone = true));
  t.teardown(async () => {
    if (!gone) {
      child.kill(options.teardownSignal ?? "SIGTERM");
      await exited;
    }
  });
  const logLines = () =>
    out
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const workerOnly = options.args?.includes("--role=worker") === true;
  const port = await waitFor(
    async () => {
      if (gone) throw new Error(`the service exited during start-up:\n${out}\n${err}`);
      if (workerOnly)
        return logLines().some((line) => /^Integrator worker .* running$/.test(String(line.msg))) ? 0 : undefined;
      const listening = logLines().find((line) => String(line.msg).includes("listening on"));
      return typeof listening?.port === "number" ? listening.port : undefined;
    },
    (value) => value !== undefined,
    { seconds },
  );
  if (port === undefined) throw new Error(`the service did not start in ${seconds} s:\n${out}\n${err}`);
  return { child, port, stdout: () => out, logLines, exited };
}

/** Runs `node app/main.ts` (`args`, default `--role=api`) with `env` until it exits, for a start that fails. */
export function runMainToExit(
  env: Record<string, string>,
  args: string[] = ["--role=api"],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: processEnv(env), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}
