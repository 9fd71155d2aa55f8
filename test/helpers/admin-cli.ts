// Runs the real admin CLI (`node admin/main.ts ...`) against a test server's database.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { TestServer } from "./server.ts";

export function runAdminCli(
  server: Pick<TestServer, "env">,
  args: string[],
  /** `root`: the checkout whose CLI runs (default the working directory's); `env`: settings over the server's. */
  options: { stdin?: string; root?: string; env?: Record<string, string> } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // Releases before 0.2.0 kept the CLI in scripts/admin.ts; from 0.2.0 it is admin/main.ts.
    const root = options.root ?? process.cwd();
    const cli = fs.existsSync(path.join(root, "admin", "main.ts")) ? "admin/main.ts" : "scripts/admin.ts";
    const child = spawn(process.execPath, [cli, ...args], {
      ...(options.root ? { cwd: options.root } : {}),
      env: { ...process.env, ...server.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end(options.stdin ?? "");
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
