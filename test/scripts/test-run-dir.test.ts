// npm test's directory for a run's temporary files (scripts/test-run-dir.ts): made in memory when there is
// room and TMPDIR is not set, open to the postgres user; what an interrupted run left goes, a running
// one's stays.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { inMemoryRunDir, RUN_DIR_PREFIX } from "../../scripts/test-run-dir.ts";
import { tempDir } from "../helpers/temp-dir.ts";

/** The pid of a process that has exited. */
function goneProcessPid(): number {
  const child = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
  return Number(child.stdout.trim());
}

t.test("a directory of its own, open to other users; an interrupted run's goes, a running one's stays", async (t) => {
  const root = tempDir(t, "run-dir-root-");
  const interrupted = path.join(root, `${RUN_DIR_PREFIX}${goneProcessPid()}-abc123`);
  const running = path.join(root, `${RUN_DIR_PREFIX}${process.ppid}-def456`);
  const other = path.join(root, "something-else");
  for (const dir of [interrupted, running, other]) fs.mkdirSync(path.join(dir, "pg"), { recursive: true });

  const dir = inMemoryRunDir(root, 1, {});
  t.ok(dir, "a directory");
  t.equal(path.dirname(dir ?? ""), root);
  t.match(path.basename(dir ?? ""), new RegExp(`^${RUN_DIR_PREFIX}${process.pid}-`), "named for this process");
  t.equal(fs.statSync(dir ?? "").mode & 0o777, 0o755);
  t.notOk(fs.existsSync(interrupted), "the interrupted run's directory is removed");
  t.ok(fs.existsSync(running), "a running process's directory stays");
  t.ok(fs.existsSync(other), "what is not a run's directory stays");
});

t.test("none when TMPDIR is set, the room is short or the place is missing", async (t) => {
  const root = tempDir(t, "run-dir-root-");
  t.equal(inMemoryRunDir(root, 1, { TMPDIR: "/var/tmp" }), undefined, "TMPDIR set");
  t.equal(inMemoryRunDir(root, Number.MAX_SAFE_INTEGER, {}), undefined, "not enough room");
  t.equal(inMemoryRunDir(path.join(root, "missing"), 1, {}), undefined, "no such place");
  t.same(fs.readdirSync(root), [], "nothing made");
});
