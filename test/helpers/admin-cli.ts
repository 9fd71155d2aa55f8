// Runs the real admin CLI (`node admin/main.ts ...`) against a test server's database, or one of its
// commands in this process.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { TestServer } from "./server.ts";
import type { Services } from "../../foundation/services.ts";
import { adminCommands } from "../../admin/commands.ts";

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

/**
 * Runs an admin CLI command in this process on `services` (a test server's): the command's own rules and
 * result, without the start of a process. What the CLI adds (flag parsing, exit codes, stderr, the JSON on
 * stdout) is what runAdminCli checks.
 */
export function runAdminCommand(
  services: Services,
  name: string,
  flags: Record<string, string>,
  stdin?: string,
): Promise<unknown> {
  const command = adminCommands[name];
  if (!command) throw new Error(`the admin CLI has no command ${name}`);
  return command.run(services, flags, stdin);
}
