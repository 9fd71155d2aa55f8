// A merged migration is frozen history: a database that ran it must never meet a different text under
// the same name in knex_migrations. db/migrations/checksums.txt holds each migration file's SHA-256 in
// the format `sha256sum` writes (so `sha256sum -c checksums.txt` in db/migrations checks it too), and this
// test fails naming any file whose bytes differ from its line, any listed file that is gone, and any
// migration file without a line (printing the line to append).
import t from "tap";
import type { Test } from "tap";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { migrationSource } from "../../db/migrations/index.ts";

const FOLDER = new URL("../../db/migrations/", import.meta.url);
const LIST = "checksums.txt";
const MIGRATION_FILE = /^\d{4}_[a-z0-9_]+\.ts$/;

function sha256(file: string): string {
  return createHash("sha256")
    .update(fs.readFileSync(new URL(file, FOLDER)))
    .digest("hex");
}

/** The list's lines as file → checksum; a line not in `sha256sum`'s format fails the test. */
function listed(t: Test): Map<string, string> {
  const entries = new Map<string, string>();
  const lines = fs.readFileSync(new URL(LIST, FOLDER), "utf8").split("\n");
  for (const [index, line] of lines.entries()) {
    if (line === "" && index === lines.length - 1) continue;
    const match = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
    if (!match?.[1] || !match[2]) {
      t.fail(`db/migrations/${LIST}:${index + 1} is not "<sha256>  <file>": ${JSON.stringify(line)}`);
      continue;
    }
    entries.set(match[2], match[1]);
  }
  return entries;
}

t.test("every migration file has the bytes its line in db/migrations/checksums.txt records", async (t) => {
  const checksums = listed(t);
  const files = fs
    .readdirSync(FOLDER)
    .filter((file) => MIGRATION_FILE.test(file))
    .sort();
  const names = (await migrationSource.getMigrations([])).map((entry) => migrationSource.getMigrationName(entry));
  t.same(
    files.map((file) => file.slice(0, -".ts".length)),
    names,
    "the files read are the migrations db/migrations/index.ts runs",
  );

  const changed = files.filter((file) => checksums.has(file) && checksums.get(file) !== sha256(file));
  t.same(
    changed.map((file) => `db/migrations/${file}`),
    [],
    "a merged migration never changes: put the change in a new migration (and restore the file with `git checkout`)",
  );

  const missing = [...checksums.keys()].filter((file) => !files.includes(file));
  t.same(
    missing.map((file) => `db/migrations/${file}`),
    [],
    "a merged migration is never deleted or renamed: databases have run it under that name",
  );

  const unlisted = files.filter((file) => !checksums.has(file));
  t.same(
    unlisted.map((file) => `${sha256(file)}  ${file}`),
    [],
    `a new migration appends its line to db/migrations/${LIST} (these lines, or \`sha256sum <file> >> ${LIST}\` in db/migrations)`,
  );
});
