// `npm run mock` (Prism) as a child process on a loopback port, stopped with its process group when the
// test ends.
import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import type { Test } from "tap";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { waitFor } from "./wait.ts";

export interface RunningMock {
  baseUrl: string;
  /** The npm process (its own process group's leader). */
  npm: ChildProcessByStdio<null, Readable, Readable>;
  /** Everything npm and Prism wrote so far. */
  output(): string;
}

/** Starts `npm run mock` on a free port and waits until it answers (90 s at most: Prism reads the whole document). */
export async function startMock(t: Test): Promise<RunningMock> {
  const port = await freePort();
  const npm = spawn("npm", ["run", "mock"], {
    env: { ...process.env, MOCK_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    // A process group of its own, so that whatever is left can be stopped by the group's id.
    detached: true,
  });
  let output = "";
  npm.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  t.teardown(() => {
    try {
      if (npm.pid) process.kill(-npm.pid, "SIGKILL");
    } catch {
      // The group is gone already.
    }
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const up = await waitFor(
    () =>
      fetch(`${baseUrl}/v1/health`).then(
        (res) => res.status,
        () => 0,
      ),
    (status) => status > 0 || npm.exitCode !== null,
    { seconds: 90, intervalMs: 250 },
  );
  if (up !== 200) throw new Error(`npm run mock did not answer (${up}): ${output}`);
  return { baseUrl, npm, output: () => output };
}
