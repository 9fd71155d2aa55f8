// A supervisor that runs `npm start` stops it with SIGTERM to the npm process: that must reach the
// service, which then stops everything (its embedded PostgreSQL included) and exits 0, as npm does. And
// npm start is plain `node app/main.ts`: no Node flags, and the environment the operator gave it, nothing
// added (Node's defaults everywhere; docs/operating.md, "Memory").
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import t from "tap";
import { parse } from "yaml";
import { tempDir } from "../helpers/temp-dir.ts";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { waitFor } from "../helpers/wait.ts";

const ROOT = path.join(import.meta.dirname, "..", "..");
/** An operator's own NODE_OPTIONS, given to npm start: it reaches the service as given. */
const OPERATOR = "--max-old-space-size=300";

/** The processes whose parent is `pid` (Linux: /proc). */
function childrenOf(pid: number): number[] {
  return fs
    .readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // The parent is the 4th field, after the command name in parentheses (which may hold spaces).
        const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false; // Gone since the listing.
      }
    })
    .map(Number);
}

/** A process's arguments and environment (Linux: /proc). */
function commandOf(pid: number): { argv: string[]; env: Map<string, string> } {
  const fields = (file: string) => fs.readFileSync(`/proc/${pid}/${file}`, "utf8").split("\0").filter(Boolean);
  const env = new Map(
    fields("environ").map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
  );
  return { argv: fields("cmdline"), env };
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

t.test("SIGTERM to the npm start process stops the service and its embedded PostgreSQL; npm exits 0", async (t) => {
  const dataDir = tempDir(t, "integrator-npm-start-");
  const pgPort = await freePort();
  const npm = spawn("npm", ["start"], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: "development",
      DATABASE_URL: "",
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(pgPort),
      PORT: "0",
      LOG_LEVEL: "info",
      SEED_DEMO: "false",
      LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
      NODE_OPTIONS: OPERATOR,
      GLIBC_TUNABLES: "",
    },
    stdio: ["ignore", "pipe", "pipe"],
    // A process group of its own, so that a failed test can stop everything npm started by the group's id.
    detached: true,
  });
  let out = "";
  npm.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  npm.stderr.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once("exit", (code, signal) => resolve({ code, signal })),
  );
  t.teardown(async () => {
    // Should the test fail half-way, stop whatever is left: npm's process group, then PostgreSQL through
    // its own pid file (never by name).
    try {
      process.kill(-(npm.pid as number), "SIGKILL");
    } catch {
      // The group is gone already.
    }
    const pidFile = path.join(dataDir, "pg", "postmaster.pid");
    if (fs.existsSync(pidFile)) {
      const pid = Number(fs.readFileSync(pidFile, "utf8").split("\n")[0]);
      if (pid > 0) {
        try {
          process.kill(pid, "SIGTERM");
        } catch {
          // Not running any more.
        }
      }
    }
  });

  const port = await waitFor(
    async () => /"port":(\d+)[^\n]*listening on/.exec(out)?.[1],
    (found) => found !== undefined || npm.exitCode !== null,
    { seconds: 120 },
  );
  t.ok(port, `the service listens (${out.slice(-500)})`);
  t.ok(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid")), "the embedded PostgreSQL runs");
  t.match(
    out,
    /"msg":"Integrator API \S+ listening on http:\/\/localhost:(\d+); API reference http:\/\/localhost:\1\/docs; webhook portal http:\/\/localhost:\1\/portal /,
    "the start banner names the reference page and the portal",
  );
  // npm ran the service in its own place (exec): node, with no flag before app/main.ts, and the environment
  // npm was given (the operator's NODE_OPTIONS, and what the test runner adds to it), nothing added.
  const [service, ...others] = childrenOf(npm.pid as number);
  t.equal(others.length, 0, "npm started one process");
  const { argv, env } = commandOf(service as number);
  const given = commandOf(npm.pid as number).env;
  t.equal(path.basename(argv[0] ?? ""), "node", `the service is node (${argv.join(" ")})`);
  t.same(argv.slice(1), ["app/main.ts"], "started as node app/main.ts, no flags");
  t.match(given.get("NODE_OPTIONS"), OPERATOR, "npm was given the operator's NODE_OPTIONS");
  t.equal(env.get("NODE_OPTIONS"), given.get("NODE_OPTIONS"), "the service has them, nothing added");
  t.equal(env.get("GLIBC_TUNABLES") ?? "", "", "no allocator setting added");

  npm.kill("SIGTERM");
  const { code, signal } = await exited;
  t.equal(signal, null, "npm was not killed by the signal");
  t.equal(code, 0, "npm exits 0");
  t.match(out, /"msg":"shutdown complete"/, "the service shut down gracefully");
  t.ok(await refused(Number(port)), "nothing listens on the API port any more");
  t.ok(await refused(pgPort), "nothing listens on the embedded PostgreSQL's port any more");
  t.notOk(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid")), "PostgreSQL stopped cleanly");
});

t.test("the image and compose.yaml start the service as npm start does, on Node's defaults", async (t) => {
  const dockerfile = fs.readFileSync(path.join(ROOT, "Dockerfile"), "utf8");
  t.match(dockerfile, /^CMD \["node", "app\/main\.ts", "--role=api"\]$/m, "the image's command");
  const compose = parse(fs.readFileSync(path.join(ROOT, "compose.yaml"), "utf8")) as {
    services: Record<string, { command?: string[] }>;
  };
  t.same(compose.services.api?.command, ["node", "app/main.ts", "--role=api"], "compose's API");
  t.same(compose.services.worker?.command, ["node", "app/main.ts", "--role=worker"], "compose's worker");
  // At most a --max-old-space-size sized to the container's memory (docs/operating.md, "Memory"): no other
  // V8 flag and no allocator setting.
  for (const [file, text] of [
    ["Dockerfile", dockerfile],
    ["compose.yaml", fs.readFileSync(path.join(ROOT, "compose.yaml"), "utf8")],
  ] as const) {
    const settings = text.replace(/^\s*#.*$/gm, "");
    const flags = settings.match(/--[a-z-]+-size|--[a-z]+-gc[a-z-]*|GLIBC_TUNABLES/g) ?? [];
    t.ok(
      flags.every((flag) => flag === "--max-old-space-size") && flags.length <= 1,
      `${file}: at most one --max-old-space-size (${flags.join(", ") || "none"})`,
    );
  }
});
