// Where one run of npm test keeps its temporary files: its PostgreSQL cluster, and TMPDIR for the test files
// (repository copies, the clusters some of them start, browser profiles). In memory when /dev/shm has room,
// unless TMPDIR is set: a clone of the template creates about 900 files, and on a disk just after many
// deletions (each file's database is dropped when it ends) ext4 spent up to 0.3 s of kernel CPU finding a
// clone its inodes (CONTRIBUTING, "How long the suite takes").
import fs from "node:fs";
import path from "node:path";

const IN_MEMORY = "/dev/shm";
const IN_MEMORY_ROOM_BYTES = 2 * 1024 ** 3;
export const RUN_DIR_PREFIX = "integrator-test-";

/**
 * A new directory under `root` (named for this process) for this run's temporary files, or undefined to use
 * the temporary directory: when TMPDIR is set, or `root` is missing or has less than `roomBytes` free.
 * Directories an interrupted run left there, whose process is gone, are removed first: in memory they would
 * hold it until the machine restarts.
 */
export function inMemoryRunDir(
  root = IN_MEMORY,
  roomBytes = IN_MEMORY_ROOM_BYTES,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (env.TMPDIR) return undefined;
  try {
    const { bavail, bsize } = fs.statfsSync(root);
    if (bavail * bsize < roomBytes) return undefined;
    for (const name of fs.readdirSync(root)) {
      const pid = name.startsWith(RUN_DIR_PREFIX) ? Number(name.slice(RUN_DIR_PREFIX.length).split("-")[0]) : 0;
      if (pid > 0 && !isRunning(pid)) fs.rmSync(path.join(root, name), { recursive: true, force: true });
    }
    const dir = fs.mkdtempSync(path.join(root, `${RUN_DIR_PREFIX}${process.pid}-`));
    // Open to other users as /tmp is: the embedded PostgreSQL runs as the user postgres.
    fs.chmodSync(dir, 0o755);
    return dir;
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
