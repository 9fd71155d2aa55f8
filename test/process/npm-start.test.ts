// A supervisor that runs `npm start` stops it with SIGTERM to the npm process: that must reach the
// service, which then stops everything (its embedded PostgreSQL included) and exits 0, as npm does. And
// npm start gives the service the shipped heap sizing and allocator setting, which the operator's
// NODE_OPTIONS and GLIBC_TUNABLES can change.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import { shippedStart } from "../../scripts/shipped-start.ts";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { waitFor } from "../helpers/wait.ts";

const ROOT = path.join(import.meta.dirname, "..", "..");
const { nodeOptions: SHIPPED, glibcTunables: SHIPPED_TUNABLES } = shippedStart();
/** An operator's own NODE_OPTIONS, given to npm start: it comes after the shipped sizing, so it wins. */
const OPERATOR = "--max-old-space-size=300";
/** An operator's own GLIBC_TUNABLES: after the shipped one, so it wins for any tunable both name. */
const OPERATOR_TUNABLES = "glibc.malloc.trim_threshold=262144";

/** The heap limit V8 gives these NODE_OPTIONS, MiB, as the start log reports it. */
function heapLimitFor(nodeOptions: string): number {
  const { stdout } = spawnSync(
    process.execPath,
    ["-e", "process.stdout.write(String(Math.round(require('v8').getHeapStatistics().heap_size_limit / 2 ** 20)))"],
    { env: { PATH: process.env.PATH ?? "", NODE_OPTIONS: nodeOptions }, encoding: "utf8" },
  );
  return Number(stdout);
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
      GLIBC_TUNABLES: OPERATOR_TUNABLES,
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
  // The shipped heap sizing (package.json's config.node_options) reaches the service, with the operator's
  // NODE_OPTIONS after it: the shipped young generation with the operator's old space.
  const expected = heapLimitFor(`${SHIPPED} ${OPERATOR}`);
  t.not(expected, heapLimitFor(OPERATOR), "the shipped sizing changes the heap limit (else this proves nothing)");
  t.match(
    out,
    new RegExp(`"heap_limit_mb":${expected}[,}][^\n]*listening on`),
    `the service's heap limit is ${expected} MiB`,
  );
  // HEAP_GROWING_PERCENT at its default, set in V8 at start (test/server/memory.test.ts shows its effect).
  t.match(
    out,
    /"heap_growing_percent":100[,}][^\n]*listening on/,
    "the old generation may double between full collections",
  );
  // HEAP_YOUNG_GC_TASK at its default: the young generation is collected once full.
  t.match(out, /"heap_young_gc_task":false[,}][^\n]*listening on/, "no young-generation task");
  // The allocator setting reaches the process (glibc reads it as the process starts), the operator's after it.
  t.match(
    out,
    new RegExp(
      `"glibc_tunables":"${`${SHIPPED_TUNABLES}:${OPERATOR_TUNABLES}`.replaceAll(".", "\\.")}"[,}][^\n]*listening on`,
    ),
    "the shipped GLIBC_TUNABLES, then the operator's",
  );
  // Every module of the service loaded from the JavaScript written before the start (scripts/strip-types.ts,
  // app/load-stripped.mjs): Node's own type stripper never loaded.
  const sources = /"typescript_sources":\{"prestripped":(\d+),"stripped_at_load":(\d+)\}[^\n]*listening on/.exec(out);
  t.ok(sources, "the start line says how the TypeScript modules were loaded");
  t.ok(Number(sources?.[1]) > 50, `the modules loaded from the JavaScript written ahead (${sources?.[1]})`);
  t.equal(Number(sources?.[2]), 0, "none stripped at load");

  npm.kill("SIGTERM");
  const { code, signal } = await exited;
  t.equal(signal, null, "npm was not killed by the signal");
  t.equal(code, 0, "npm exits 0");
  t.match(out, /"msg":"shutdown complete"/, "the service shut down gracefully");
  t.ok(await refused(Number(port)), "nothing listens on the API port any more");
  t.ok(await refused(pgPort), "nothing listens on the embedded PostgreSQL's port any more");
  t.notOk(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid")), "PostgreSQL stopped cleanly");
});

t.test("the image ships the heap sizing and the sources stripped ahead, as npm start does", async (t) => {
  const dockerfile = fs.readFileSync(path.join(ROOT, "Dockerfile"), "utf8");
  t.equal(/^\s*NODE_OPTIONS="([^"]*)"/m.exec(dockerfile)?.[1], SHIPPED, "the Dockerfile's NODE_OPTIONS");
  t.equal(/^\s*GLIBC_TUNABLES="([^"]*)"/m.exec(dockerfile)?.[1], SHIPPED_TUNABLES, "the Dockerfile's GLIBC_TUNABLES");
  t.match(dockerfile, /^RUN node --disable-warning=ExperimentalWarning scripts\/strip-types\.ts$/m, "strips at build");
  t.match(
    dockerfile,
    /^CMD \["node", "--import", "\.\/app\/load-stripped\.mjs", "app\/main\.ts", "--role=api"\]$/m,
    "and loads what it stripped",
  );
});
