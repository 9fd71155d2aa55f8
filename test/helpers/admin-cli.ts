// Runs the real admin CLI (`node admin/main.ts ...`) against a test server's database.
import { spawn } from "node:child_process";
import type { TestServer } from "./server.ts";

export function runAdminCli(
  server: Pick<TestServer, "env">,
  args: string[],
  options: { stdin?: string } = {},
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["admin/main.ts", ...args], {
      env: { ...process.env, ...server.env },
      stdio: ["pipe", "pipe", "inherit"],
    });
    child.stdin.end(options.stdin ?? "");
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.on("close", (code) => resolve({ code, stdout }));
  });
}
