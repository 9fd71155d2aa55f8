// The README's quickstart, run as written after the set-up's one `npm ci` (which this clone has had): the
// service block starts the service, the receiver block is saved as receiver.mjs, and the step blocks run
// in order in one bash; the receiver must print a verified event and the deliveries list show it
// delivered. No block installs again, and every wait has a deadline after which it says what to check.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t, { type Test } from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { waitFor } from "../helpers/wait.ts";
import { freePort } from "../../scripts/throwaway-postgres.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");

/** The fenced blocks of `language` between the marker and the next marker (or the end). */
function blocksAfter(marker: string, language: string): string[] {
  const start = README.indexOf(`<!-- ${marker}`);
  if (start === -1) throw new Error(`the README has no <!-- ${marker} --> marker`);
  const rest = README.slice(start + marker.length);
  const next = rest.search(/<!-- quickstart:/);
  const section = next === -1 ? rest : rest.slice(0, next);
  return [...section.matchAll(new RegExp("```" + language + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1] ?? "");
}

function run(t: Test, script: string, cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawn("bash", ["-c", script], { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const stop = () => {
    if (child.pid) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // the group is gone already
      }
    }
  };
  t.teardown(stop);
  return { child, output: () => output, stop };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code)),
  );

t.test("the README's quickstart, pasted in order, ends with a verified delivery", async (t) => {
  const [service] = blocksAfter("quickstart:service", "sh");
  const steps = blocksAfter("quickstart:steps", "sh");
  const [receiver] = blocksAfter("quickstart:receiver receiver.mjs", "js");
  if (!service || !receiver || steps.length === 0) return t.fail("the README lacks a quickstart block");
  t.notMatch([service, receiver, ...steps].join("\n"), /\bnpm (ci|install|i)\b/, "no second install");
  // A wait that never ends leaves a person with a silent terminal: each gives up, then says what to check.
  const script = steps.join("\n");
  t.notMatch(script, /\buntil\b|\bwhile\b/, "no wait without a deadline");
  const waits = [...script.matchAll(/^for i in \$\(seq \d+\); do (.+?) && break; sleep [\d.]+; done/gm)];
  t.equal(waits.length, 3, "three waits: the service, the receiver, the delivery");
  for (const [, condition = "-"] of waits) {
    const givingUp = script.split("\n").find((line) => line.startsWith(`${condition} || `));
    t.match(givingUp, /echo "[^"]+ after \d+ (s|minutes?): [^"]+"/, `the wait for ${condition} says what to check`);
  }
  t.match(service, /npm start/, "the service block runs npm start");

  // A folder of its own that looks like the repository, so that the files the quickstart writes stay there.
  const folder = tempDir(t, "quickstart-");
  for (const entry of [
    "package.json",
    "node_modules",
    "app",
    "admin",
    "foundation",
    "http",
    "handlers",
    "db",
    "worker",
    "scripts",
    "generated",
    "openapi",
  ])
    fs.symlinkSync(path.join(ROOT, entry), path.join(folder, entry));

  const [apiPort, receiverPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    DATABASE_URL: await createTestDatabase(t),
    PORT: String(apiPort),
    LOG_LEVEL: "warn",
    BASE_URL: `http://127.0.0.1:${apiPort}`,
    RECEIVER_PORT: String(receiverPort),
  };
  const api = run(t, service, folder, env);
  const ready = await waitFor(
    () =>
      fetch(`${env.BASE_URL}/v1/readyz`).then(
        (res) => res.status,
        () => 0,
      ),
    (status) => status === 200,
    { seconds: 60, intervalMs: 250 },
  );
  t.equal(ready, 200, "the service started by the quickstart is ready");
  if (ready !== 200) return t.comment(api.output());

  fs.writeFileSync(path.join(folder, "receiver.mjs"), receiver);
  const quickstart = run(t, `set -euo pipefail\n${steps.join("\n")}`, folder, env);
  const timer = setTimeout(quickstart.stop, 120_000);
  const code = await exited(quickstart.child);
  clearTimeout(timer);
  t.equal(code, 0, "every step succeeds");
  const output = quickstart.output();
  t.match(output, /"roles":\["client_admin"\]/, "GET /v1/me shows the client's roles");
  t.match(
    output,
    /verified event evt_[0-9a-f-]{36}: intake\.submitted \{.*"status":"received"/,
    "the receiver verified it",
  );
  t.match(output, /"status":"delivered"/, "the deliveries list shows it delivered");
  if (code !== 0) t.comment(output);
  quickstart.stop();
  api.stop();
  await exited(api.child);
});
