// npm test: the whole suite on a throwaway embedded PostgreSQL (or the server in DATABASE_URL).
// One template database is migrated once; every test file clones its own database from it
// (test/helpers/database.ts), so files running in parallel never share data.
// The whole suite (no arguments) must exercise every operation of the document: each test server records
// what it answers (scripts/operation-coverage.ts), and an operation that never answered 2xx fails the run.
// Prints a last line "N passed, N failed" from tap's totals (plus one failure for unexercised operations).
// When the whole suite runs or the rolling-upgrade test is named, a checkout of the previous release with its
// own packages is prepared first (test/helpers/previous-release.ts), beside the template's migration.
// The run's temporary files (the cluster, the test files' TMPDIR) are in memory when there is room for them
// (scripts/test-run-dir.ts).
import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createDatabase, createDatabaseOnServer, dropDatabaseOnServer } from "../db/database.ts";
import { migrateAll } from "../app/services.ts";
import { coverageReport, OPERATIONS_DIR_ENV } from "./operation-coverage.ts";
import { bundleDocument, ROOT } from "./openapi-source.ts";
import { withFoldersExpanded } from "./test-files.ts";
import { inMemoryRunDir } from "./test-run-dir.ts";
import { throwawayPostgres, withDatabase } from "./throwaway-postgres.ts";
import {
  PREVIOUS_RELEASE,
  PREVIOUS_RELEASE_DIR_ENV,
  PREVIOUS_RELEASE_ERROR_ENV,
  preparePreviousRelease,
  runsUpgradeTest,
} from "../test/helpers/previous-release.ts";

const TEMPLATE = "integrator_test_template";
// The embedded cluster lives for one run and is deleted after it, so flushing to disk buys nothing
// (PostgreSQL's "Non-Durable Settings"); with it, each DROP DATABASE of a file's clone waited seconds for
// the disk when other work was writing to it.
const NON_DURABLE = { fsync: "off" };
const COMPILE_CACHE = path.join(ROOT, "node_modules", ".cache", "node-compile-cache");
// tap loads @tapjs/processinfo into every process of a test file, which reads and records each module the
// process loads (for `tap --changed` and coverage, neither of which this suite uses): about 0.35 s of CPU
// for each process that loads the app. Its exclusion pattern, matching every file, turns the recording off.
const NO_FILE_TRACKING = "--test-env=_TAPJS_PROCESSINFO_EXCLUDE_=/./";

/** The previous release's checkout for the upgrade test, or why there is none (the test then fails saying so). */
async function previousRelease(): Promise<Record<string, string>> {
  const started = performance.now();
  try {
    const { dir, reused } = await preparePreviousRelease();
    if (!reused)
      console.error(
        `previous release ${PREVIOUS_RELEASE.slice(0, 7)} prepared in ${((performance.now() - started) / 1000).toFixed(1)} s: ${dir}`,
      );
    return { [PREVIOUS_RELEASE_DIR_ENV]: dir };
  } catch (error) {
    console.error(error);
    return { [PREVIOUS_RELEASE_ERROR_ENV]: error instanceof Error ? error.message : String(error) };
  }
}

const TAP_BIN = path.join(ROOT, "node_modules", "tap", "dist", "esm", "run.mjs");
/** tap's version and package.json's tap plugin list as of the last `tap build` of this install. */
const TAP_BUILT_FOR = path.join(ROOT, "node_modules", ".cache", "tap-plugins-built.json");

/**
 * tap builds its plugin set afresh when package.json's differs from the one it was installed with, but the
 * test processes of that run still get the installed set's loaders (a TypeScript loader and the mock loader
 * in every process: a fresh clone's first run took half as long again). So `tap build` runs first, once
 * per install of tap and again after the plugin list changes.
 */
async function buildTapPlugins(): Promise<void> {
  const read = (file: string) => JSON.parse(fs.readFileSync(path.join(ROOT, file), "utf8")) as unknown;
  const manifest = read("package.json") as { tap?: { plugin?: string[] } };
  const tap = read("node_modules/tap/package.json") as { version: string };
  const wanted = JSON.stringify({ tap: tap.version, plugin: manifest.tap?.plugin ?? [] });
  if (fs.existsSync(TAP_BUILT_FOR) && fs.readFileSync(TAP_BUILT_FOR, "utf8") === wanted) return;
  await promisify(execFile)(process.execPath, [TAP_BIN, "build"], { cwd: ROOT });
  fs.mkdirSync(path.dirname(TAP_BUILT_FOR), { recursive: true });
  fs.writeFileSync(TAP_BUILT_FOR, wanted);
}

async function main(): Promise<number> {
  const tapArgs = withFoldersExpanded(process.argv.slice(2));
  const previous = runsUpgradeTest(tapArgs) ? previousRelease() : Promise.resolve({});
  const tapPlugins = buildTapPlugins();
  const runDir = inMemoryRunDir();
  const postgres = await throwawayPostgres("integrator-test", NON_DURABLE, runDir);
  const { adminUrl } = postgres;

  await dropDatabaseOnServer(adminUrl, TEMPLATE);
  await createDatabaseOnServer(adminUrl, TEMPLATE);
  const templateUrl = withDatabase(adminUrl, TEMPLATE);
  const db = createDatabase(templateUrl, 2);
  await migrateAll(db, templateUrl);
  await db.destroy();
  const previousReleaseEnv = await previous;

  // Only the whole suite can tell whether an operation is never exercised.
  const operationsDir =
    tapArgs.length === 0 ? fs.mkdtempSync(path.join(os.tmpdir(), "integrator-operations-")) : undefined;
  await tapPlugins;
  const output: string[] = [];
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, [TAP_BIN, NO_FILE_TRACKING, ...tapArgs], {
      stdio: ["ignore", "pipe", "inherit"],
      env: {
        ...process.env,
        // Node's on-disk cache of compiled modules (keyed by each file's content): every test file is a
        // process of its own that loads much the same modules, and compiling them was about a tenth of
        // the suite's CPU time. Children that keep this environment (the admin CLI) use it too.
        NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? COMPILE_CACHE,
        TEST_PG_ADMIN_URL: adminUrl,
        TEST_PG_TEMPLATE: TEMPLATE,
        NODE_ENV: "test",
        ...(runDir ? { TMPDIR: runDir } : {}),
        ...previousReleaseEnv,
        ...(operationsDir ? { [OPERATIONS_DIR_ENV]: operationsDir } : {}),
      },
    });
    child.stdout.on("data", (chunk: Buffer) => {
      process.stdout.write(chunk);
      output.push(chunk.toString("utf8"));
    });
    child.on("close", (exitCode) => resolve(exitCode ?? 1));
  });

  await dropDatabaseOnServer(adminUrl, TEMPLATE).catch(() => undefined);
  await postgres.stop();
  if (runDir) fs.rmSync(runDir, { recursive: true, force: true });

  // tap's terse reporter (package.json) ends with "Asserts:  N pass  N fail ..." (colour codes stripped).
  const text = output.join("").replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "");
  const totals = [...text.matchAll(/Asserts:\s+(\d+) pass\s+(\d+) fail/g)].at(-1);
  const passed = totals ? Number(totals[1]) : 0;
  let failed = totals ? Number(totals[2]) : code === 0 ? 0 : 1;
  if (operationsDir) {
    const report = coverageReport(bundleDocument(), operationsDir);
    fs.rmSync(operationsDir, { recursive: true, force: true });
    for (const line of report) console.log(line);
    if (report.length > 0) failed += 1;
  }
  console.log(`${passed} passed, ${failed} failed`);
  return code !== 0 ? code : failed > 0 || passed === 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    console.log("0 passed, 1 failed");
    process.exit(1);
  },
);
