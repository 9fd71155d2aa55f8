// The release before this one, as test/db/rolling-upgrade.test.ts runs it beside the new schema: its commit,
// and a checkout of that commit (`git archive`) in the temporary directory with the packages of its own lock
// file. When that lock file is this clone's, byte for byte, the packages installed here are the ones it pins,
// so the checkout links this clone's node_modules (named for this clone and its lock file, and prepared
// again when the link no longer leads to them); otherwise they are installed as the image installs them
// (`npm ci --omit=dev`). npm test prepares the checkout before tap starts (scripts/test.ts), when the whole
// suite runs or the upgrade test is named, and hands its directory to the test files in
// PREVIOUS_RELEASE_DIR_ENV. Later runs reuse a prepared checkout.
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./repository-copy.ts";

// The commit of the release before this one, which the upgrade test runs beside the new schema; bump it when cutting a release.
export const PREVIOUS_RELEASE = "042d14c60f8e1aee98f78ec46485ed5bac8c34cf";

/** The prepared checkout's directory, set by npm test for the test files. */
export const PREVIOUS_RELEASE_DIR_ENV = "INTEGRATOR_PREVIOUS_RELEASE_DIR";
/** Why npm test could not prepare the checkout, when it could not. */
export const PREVIOUS_RELEASE_ERROR_ENV = "INTEGRATOR_PREVIOUS_RELEASE_ERROR";

/** The test that needs the checkout, from the repository's root. */
export const UPGRADE_TEST = "test/db/rolling-upgrade.test.ts";

/** Written into a checkout once its packages are installed: a directory without it is incomplete. */
const PREPARED_MARK = ".previous-release-prepared";

/**
 * Whether tap, given these arguments, runs the upgrade test: they name no file or folder (the whole suite), or
 * name it or a folder holding it. An argument that is no path on disk is an option's value.
 */
export function runsUpgradeTest(tapArgs: readonly string[]): boolean {
  const paths = tapArgs.filter((arg) => !arg.startsWith("-") && fs.existsSync(arg));
  if (paths.length === 0) return true;
  const test = path.join(ROOT, UPGRADE_TEST);
  return paths.some((arg) => {
    const named = path.resolve(arg);
    return named === test || test.startsWith(named + path.sep);
  });
}

/** Whether the commit's lock file is this clone's, byte for byte: then the packages installed here are its own. */
function sharesLockFile(commit: string): boolean {
  let theirs: Buffer;
  try {
    theirs = execFileSync("git", ["-C", ROOT, "show", `${commit}:package-lock.json`], {
      stdio: ["ignore", "pipe", "ignore"],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch {
    return false; // not in this clone: git archive below says why
  }
  return theirs.equals(fs.readFileSync(path.join(ROOT, "package-lock.json")));
}

function checkoutDir(commit: string, linked: boolean): string {
  if (!linked) return path.join(os.tmpdir(), "integrator-previous-release", commit);
  const lockFile = fs.readFileSync(path.join(ROOT, "package-lock.json"));
  const clone = createHash("sha256").update(ROOT).update("\0").update(lockFile).digest("hex").slice(0, 16);
  return path.join(os.tmpdir(), "integrator-previous-release", `${commit}-linked-${clone}`);
}

function isPrepared(dir: string, commit: string): boolean {
  try {
    // A linked checkout's packages are this clone's: present unless node_modules went since.
    fs.accessSync(path.join(dir, "node_modules", "pg", "package.json"));
    return fs.readFileSync(path.join(dir, PREPARED_MARK), "utf8") === commit;
  } catch {
    return false;
  }
}

function npmCi(dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["ci", "--omit=dev", "--prefer-offline", "--no-audit", "--no-fund"], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`npm ci in ${dir} exited ${code}:\n${output.slice(-4000)}`)),
    );
  });
}

/**
 * The checkout of PREVIOUS_RELEASE with its packages installed: the one a run before prepared, or a new one
 * (made beside it and renamed into place, so runs at the same time never see half of one).
 */
export async function preparePreviousRelease(): Promise<{ dir: string; reused: boolean }> {
  const linked = sharesLockFile(PREVIOUS_RELEASE);
  const dir = checkoutDir(PREVIOUS_RELEASE, linked);
  if (isPrepared(dir, PREVIOUS_RELEASE)) return { dir, reused: true };
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const work = fs.mkdtempSync(`${dir}.`);
  try {
    try {
      execFileSync("git", ["-C", ROOT, "archive", "--output", path.join(work, "source.tar"), PREVIOUS_RELEASE], {
        stdio: ["ignore", "ignore", "pipe"],
      });
    } catch (error) {
      throw new Error(
        `git archive of the previous release ${PREVIOUS_RELEASE} (test/helpers/previous-release.ts) failed: the commit must be in this clone (a shallow clone lacks it: git fetch --unshallow). ${String(error)}`,
        { cause: error },
      );
    }
    const source = path.join(work, "source");
    fs.mkdirSync(source);
    execFileSync("tar", ["-xf", path.join(work, "source.tar"), "-C", source]);
    if (linked) fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(source, "node_modules"), "dir");
    else await npmCi(source);
    fs.writeFileSync(path.join(source, PREPARED_MARK), PREVIOUS_RELEASE);
    // Another run may have put its checkout in place meanwhile; an incomplete one goes.
    if (isPrepared(dir, PREVIOUS_RELEASE)) return { dir, reused: true };
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(source, dir);
    } catch (error) {
      // Another run put its checkout in place first.
      if (!isPrepared(dir, PREVIOUS_RELEASE)) throw error;
    }
    return { dir, reused: false };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The checkout npm test prepared for this run; throws saying why there is none. */
export function previousReleaseCheckout(): string {
  const problem = process.env[PREVIOUS_RELEASE_ERROR_ENV];
  if (problem) throw new Error(`npm test could not prepare the previous release: ${problem}`);
  const dir = process.env[PREVIOUS_RELEASE_DIR_ENV];
  if (!dir)
    throw new Error(
      `${PREVIOUS_RELEASE_DIR_ENV} is not set: run this test with npm test (npm test -- ${UPGRADE_TEST}), which prepares the previous release's checkout first`,
    );
  if (!isPrepared(dir, PREVIOUS_RELEASE))
    throw new Error(`${dir} (${PREVIOUS_RELEASE_DIR_ENV}) is no prepared checkout of ${PREVIOUS_RELEASE}`);
  return dir;
}
