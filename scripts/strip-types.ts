// Writes the JavaScript of the service's TypeScript sources ahead of time (app/stripped-sources.mjs says
// where and under which name), for app/load-stripped.mjs to load: npm start, start:api and start:worker run
// it before the service, and the container image at build time. It writes only the copies missing and
// removes those no source has any more. Quiet when it succeeds; a source Node cannot strip stops it (the
// service would not load it either); a folder it cannot write is a warning on stderr and exit 0 (the
// service then strips at load, as without the copies).
//
// node --disable-warning=ExperimentalWarning scripts/strip-types.ts [root]
import fs from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import path from "node:path";
import { errorMessage } from "../server/error-message.ts";
import { SERVICE_SOURCES, strippedDir, strippedPath } from "../app/stripped-sources.mjs";

const ROOT = path.join(import.meta.dirname, "..");
const COPY_NAME = /^[0-9a-f]{64}\.js$/;

/** Every .ts source (not .d.ts) under the service's folders of `root`. */
function serviceSources(root: string): string[] {
  return SERVICE_SOURCES.map((folder) => path.join(root, folder))
    .filter((dir) => fs.existsSync(dir))
    .flatMap((dir) => fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).map((name) => path.join(dir, name)))
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"));
}

/** A source Node cannot strip: the service could not load it either. */
class UnstrippableSource extends Error {}

/** Brings the copies of `root` (this checkout unless given) in line with its sources. */
export function stripServiceSources(root = ROOT): void {
  const dir = strippedDir(root);
  fs.mkdirSync(dir, { recursive: true });
  const wanted = new Set<string>();
  for (const file of serviceSources(root)) {
    const source = fs.readFileSync(file);
    const target = strippedPath(source, dir);
    wanted.add(path.basename(target));
    if (fs.existsSync(target)) continue;
    let javascript: string;
    try {
      javascript = stripTypeScriptTypes(source.toString("utf8"), { mode: "strip" });
    } catch (error) {
      throw new UnstrippableSource(`${path.relative(root, file)}: ${errorMessage(error)}`);
    }
    // Written whole, then renamed: a process loading at the same moment reads all of it or nothing.
    const partial = `${target}.${process.pid}.partial`;
    fs.writeFileSync(partial, javascript);
    fs.renameSync(partial, target);
  }
  for (const name of fs.readdirSync(dir))
    if (COPY_NAME.test(name) && !wanted.has(name)) fs.rmSync(path.join(dir, name), { force: true });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = process.argv[2] ? path.resolve(process.argv[2]) : ROOT;
  try {
    stripServiceSources(root);
  } catch (error) {
    if (error instanceof UnstrippableSource) {
      process.stderr.write(`strip-types: ${error.message}\n`);
      process.exitCode = 1;
    } else {
      // The copies' folder (read-only, full, or not a folder): the service still starts.
      process.stderr.write(
        `strip-types: ${strippedDir(root)} cannot be written (${errorMessage(error)}); the service strips its sources as it loads them\n`,
      );
    }
  }
}
