// The arguments npm test hands to tap, with each folder named replaced by the test files under it. tap
// expands a folder only into files of the extensions its plugins know, and without its TypeScript plugin
// (package.json: Node strips the types) .ts is not one: `npm test -- test/db` found nothing to run.
import fs from "node:fs";
import path from "node:path";

const TEST_FILE_SUFFIX = ".test.ts";

export function withFoldersExpanded(args: readonly string[]): string[] {
  return args.flatMap((arg) => {
    if (arg.startsWith("-") || !isFolder(arg)) return [arg];
    const files = fs
      .readdirSync(arg, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(TEST_FILE_SUFFIX))
      .map((file) => path.join(arg, file))
      .sort();
    // A folder without tests stays as named, for tap to say it found nothing (not the whole suite).
    return files.length > 0 ? files : [arg];
  });
}

function isFolder(arg: string): boolean {
  try {
    return fs.statSync(arg).isDirectory();
  } catch {
    return false;
  }
}
