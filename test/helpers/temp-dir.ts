// A temporary directory for one test.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Test } from "tap";

/** A directory of its own, removed when the test ends. */
export function tempDir(t: Test, prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}
