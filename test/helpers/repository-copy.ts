// A copy of the repository in a temporary directory, to change a file (the document, a handler) and run
// the project's own commands on the result without touching the checkout. node_modules is a link to the
// installed packages.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Test } from "tap";
import { tempDir } from "./temp-dir.ts";

export const ROOT = path.resolve(import.meta.dirname, "..", "..");

/** A module of the checkout (`file` from its root) as a string literal for a spawned script to import. */
export function serviceModule(file: string): string {
  return JSON.stringify(pathToFileURL(path.join(ROOT, file)).href);
}

/** The typecheck's buildinfo of each TypeScript project (scripts/contract-steps.ts), beside its tsconfig. */
const BUILD_INFO = ["tsconfig.tsbuildinfo", "portal/tsconfig.tsbuildinfo"];

/** Left out of the copy: installed packages, version control, run-time data and build output. */
const LEFT_OUT = new Set([
  "node_modules",
  "scripts/codegen/node_modules",
  ".git",
  ".data",
  ".tap",
  ".artifacts",
  "coverage",
  "openapi/package/dist",
  "openapi/package/.build",
  "openapi/reference-site",
  // Put back from the kept one (keepBuildInfo), never the checkout's own: its paths are the checkout's.
  ...BUILD_INFO,
]);

/**
 * The buildinfo of the last typecheck of a copy whose TypeScript was the checkout's (`keepBuildInfo`), for
 * the next copies to start from. It names files relative to the copy, and every copy lies as deep in the
 * temporary directory, so it is valid in each; tsc compares every file's hash with it, so after a change of
 * the checkout only what the change affects is checked again.
 */
const BUILD_INFO_CACHE = path.join(ROOT, "node_modules", ".cache", "repository-copy");

/**
 * A copy of the repository's files, removed when the test ends; returns its root. Its typecheck starts from
 * the buildinfo `keepBuildInfo` kept, as a checkout's next check starts from its last one.
 */
export function copyRepository(t: Test, prefix = "integrator-copy-"): string {
  const copy = path.join(tempDir(t, prefix), "integrator-api");
  fs.cpSync(ROOT, copy, {
    recursive: true,
    filter: (source) => !LEFT_OUT.has(path.relative(ROOT, source).split(path.sep).join("/")),
  });
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(copy, "node_modules"));
  for (const file of BUILD_INFO) {
    const kept = path.join(BUILD_INFO_CACHE, file);
    if (fs.existsSync(kept)) fs.copyFileSync(kept, path.join(copy, file));
  }
  return copy;
}

/** Keeps the copy's buildinfo for the next copies: call it after a typecheck of the copy's unedited TypeScript. */
export function keepBuildInfo(copy: string): void {
  for (const file of BUILD_INFO) {
    const kept = path.join(BUILD_INFO_CACHE, file);
    fs.mkdirSync(path.dirname(kept), { recursive: true });
    // Through a file of its own and a rename, so that a copy made meanwhile never reads half of it.
    const writing = `${kept}.${process.pid}`;
    fs.copyFileSync(path.join(copy, file), writing);
    fs.renameSync(writing, kept);
  }
}

/** Replaces `search` (which must occur exactly once) in a file of the copy. */
export function editFile(root: string, file: string, search: string, replacement: string): void {
  const target = path.join(root, file);
  const text = fs.readFileSync(target, "utf8");
  const at = text.indexOf(search);
  if (at === -1 || text.indexOf(search, at + 1) !== -1)
    throw new Error(`${file} must contain ${JSON.stringify(search.slice(0, 80))} exactly once`);
  fs.writeFileSync(target, text.slice(0, at) + replacement + text.slice(at + search.length));
}
