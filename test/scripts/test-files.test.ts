// npm test's arguments (scripts/test-files.ts): a folder becomes the test files under it, at any depth and in
// order; files, options and their values pass as they are.
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { withFoldersExpanded } from "../../scripts/test-files.ts";
import { tempDir } from "../helpers/temp-dir.ts";

t.test("a folder becomes its test files; the rest passes as it is", async (t) => {
  const root = tempDir(t, "test-files-");
  for (const file of ["b.test.ts", "a.test.ts", "inner/c.test.ts", "helper.ts", "inner/notes.md"]) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), "");
  }
  const single = path.join(root, "b.test.ts");
  t.same(withFoldersExpanded([root, "--bail", single, "--grep", "some name"]), [
    path.join(root, "a.test.ts"),
    path.join(root, "b.test.ts"),
    path.join(root, "inner/c.test.ts"),
    "--bail",
    single,
    "--grep",
    "some name",
  ]);
  t.same(withFoldersExpanded([]), [], "no arguments: the whole suite, as tap's include names it");
  const empty = path.join(root, "inner", "empty");
  fs.mkdirSync(empty);
  t.same(withFoldersExpanded([empty]), [empty], "a folder without tests stays, so tap runs nothing rather than all");
});
