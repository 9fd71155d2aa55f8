// @ts-check
// Where the service's TypeScript sources are kept as JavaScript ahead of time, and how a source finds its
// copy: scripts/strip-types.ts writes them, app/load-stripped.mjs loads them. JavaScript, not TypeScript,
// because it is loaded before anything could strip types.
//
// A copy is named by the SHA-256 of its source's bytes, never by the source's path: a source edited after
// the strip has no copy, so a copy can never be stale.
import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Where a checkout keeps the copies (<sha-256 of the source, hex>.js): npm's conventional cache folder.
 * @param {string} root the checkout
 * @returns {string}
 */
export function strippedDir(root) {
  return path.join(root, "node_modules", ".cache", "integrator-api", "stripped");
}

/** This checkout's copies. */
export const STRIPPED_DIR = strippedDir(fileURLToPath(new URL("..", import.meta.url)));

/**
 * The folders of the running service (what the container image holds), whose sources are stripped ahead.
 * Tests and tooling run through Node's own stripping.
 */
export const SERVICE_SOURCES = ["app", "server", "http", "handlers", "db", "worker", "generated", "scripts/admin"];

/**
 * The file holding the JavaScript of this TypeScript source.
 * @param {Buffer | string} source the source's bytes, as read from disk
 * @param {string} [dir] the copies' folder (this checkout's unless given)
 * @returns {string}
 */
export function strippedPath(source, dir = STRIPPED_DIR) {
  return path.join(dir, `${createHash("sha256").update(source).digest("hex")}.js`);
}
