// `npm run dev`: the service as `npm start` runs it (app/main.ts, every role, on the embedded PostgreSQL
// unless DATABASE_URL is set), restarted when its code changes. When the document (openapi/openapi.yaml)
// changes, every check `npm run check:contract` runs is run on it first (generate, Redocly lint, the
// breaking-change check, typecheck, declared inputs read), every failure reported here with its operation
// and field or its file and line, and the last line says how many failed and how long it took from the save
// to that verdict; then the service restarts on the new document:
//   openapi/openapi.yaml                      every contract check, restart
//   portal/, openapi/package/src/             generate (the portal bundle), restart
//   app/ foundation/ http/ handlers/ db/ worker/  restart
//   generated/ (written by something else)    restart
// A document that does not generate leaves the running service as it is. The typecheck is incremental: it
// keeps its last program and checks again only the files a change can affect (scripts/contract-steps.ts).
// Responses are validated against the document (VALIDATE_RESPONSES defaults to true here), so a handler that
// no longer matches an edited document answers 500 and logs why. One watcher (fs.watch, recursive), no dev
// server; Ctrl-C stops the service (and its embedded database) and then this process.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { headline, runContractChecks, verdict } from "./check-contract.ts";
import { generateStep, type StepResult } from "./contract-steps.ts";
import { ROOT, SOURCE } from "./openapi-source.ts";

type Change = "document" | "portal" | "code";

/** How long to wait for more changes after one (an editor's save may write several files). */
const SETTLE_MS = 150;
/** How long after its own work this process still takes events under generated/ for its own writes. */
const OWN_WRITES_MS = 1000;
/** How long a stopping service may take before it is killed. */
const STOP_GRACE_MS = 30_000;

const CODE_FOLDERS = ["app/", "foundation/", "http/", "handlers/", "db/", "worker/", "generated/"];
const PORTAL_FOLDERS = ["portal/", "openapi/package/src/"];
const WATCHED = ["openapi", "portal", "app", "admin", "foundation", "http", "handlers", "db", "worker", "generated"];

function say(message: string): void {
  process.stdout.write(`[dev] ${message}\n`);
}

/** The files of the code and of the portal that count: not the typecheck's buildinfo beside portal/tsconfig.json. */
const SOURCE_FILE = /\.(ts|json|sql|html|css|js)$/;

/** What a changed file (relative to the repository) asks for, if anything. */
export function classify(file: string): Change | undefined {
  const name = file.split(path.sep).join("/");
  if (name === SOURCE) return "document";
  if (!SOURCE_FILE.test(name)) return undefined;
  if (PORTAL_FOLDERS.some((folder) => name.startsWith(folder))) return "portal";
  if (CODE_FOLDERS.some((folder) => name.startsWith(folder))) return "code";
  return undefined;
}

function report(name: string, result: StepResult, started: number): void {
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  say(`${result.ok ? "✓" : "✗"} ${name} (${seconds} s)`);
  for (const line of result.lines) process.stdout.write(`      ${line}\n`);
}

class Service {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  start(): void {
    const env = { ...process.env, VALIDATE_RESPONSES: process.env.VALIDATE_RESPONSES ?? "true" };
    const child = spawn(process.execPath, [path.join(ROOT, "app/main.ts")], { cwd: ROOT, env, stdio: "inherit" });
    this.child = child;
    this.exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => {
        if (this.child === child) {
          this.child = undefined;
          say(`the service exited (${signal ?? `code ${code}`}); waiting for a change`);
        }
        resolve();
      }),
    );
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return this.exited;
    this.child = undefined;
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    await this.exited;
    clearTimeout(killer);
  }

  async restart(): Promise<void> {
    await this.stop();
    this.start();
  }
}

/** A change of the document: every check, then the verdict; answers whether the document generated. */
async function onDocument(savedAt: number): Promise<boolean> {
  const outcomes = await runContractChecks({
    report: (outcome) => {
      say(headline(outcome));
      for (const line of outcome.result?.lines ?? []) process.stdout.write(`      ${line}\n`);
    },
  });
  const { line } = verdict(outcomes);
  say(`${line}, ${((performance.now() - savedAt) / 1000).toFixed(1)} s from the save to this verdict`);
  const generated = outcomes[0]?.result?.ok === true;
  if (!generated) say("the service keeps running on the last document that generated");
  return generated;
}

/** A change of the portal's sources: its bundle is regenerated. */
async function onPortal(): Promise<boolean> {
  const started = performance.now();
  const generated = await generateStep();
  report("generate", generated, started);
  if (!generated.ok) say("the service keeps running on the last portal that generated");
  return generated.ok;
}

async function main(): Promise<void> {
  const service = new Service();
  const pending = new Set<Change>();
  /** When the first change of the pending batch was seen: the save the verdict is timed from. */
  let firstSeenAt = 0;
  let busy = false;
  let timer: NodeJS.Timeout | undefined;
  let stopping = false;
  let ownWritesUntil = 0;

  const work = async (): Promise<void> => {
    if (busy || stopping || pending.size === 0) return;
    busy = true;
    const kinds = new Set(pending);
    const savedAt = firstSeenAt;
    pending.clear();
    try {
      const restart = kinds.has("document")
        ? await onDocument(savedAt)
        : kinds.has("portal")
          ? await onPortal()
          : kinds.has("code");
      if (restart && !stopping) {
        say(`restarting the service (${[...kinds].join(", ")} changed)`);
        await service.restart();
      }
    } finally {
      busy = false;
      ownWritesUntil = Date.now() + OWN_WRITES_MS;
    }
    if (pending.size > 0) schedule();
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void work(), SETTLE_MS);
  };

  // One recursive watcher per folder that matters (never the repository's root: node_modules is huge).
  const watchers = WATCHED.map((folder) =>
    fs.watch(path.join(ROOT, folder), { recursive: true }, (_event, name) => {
      if (!name) return;
      const file = path.join(folder, name.toString());
      const kind = classify(file);
      if (!kind) return;
      // generated/ changes while (and just after) this process regenerates it are its own writes.
      if (kind === "code" && file.startsWith("generated") && (busy || Date.now() < ownWritesUntil)) return;
      if (pending.size === 0) firstSeenAt = performance.now();
      pending.add(kind);
      if (!busy) schedule();
    }),
  );

  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: stopping the service`);
    for (const watcher of watchers) watcher.close();
    clearTimeout(timer);
    void service.stop().then(() => process.exit(0));
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));

  say(`watching ${SOURCE}, portal/ and the service's code; Ctrl-C stops`);
  service.start();
}

void main();
