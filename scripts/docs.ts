// `npm run build` (or `node scripts/docs.ts [DIR]`): writes the reference page the service serves at /docs as one static folder for
// publishing (default openapi/reference-site/, gitignored): index.html, the document in JSON and YAML,
// Scalar's bundled script and the page's start script, and the changelog as a page (changelog.html) and an
// Atom feed (changelog.atom); no file refers to another host, and the pages link each other relatively.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { changelogDocuments, REFERENCE_INIT_SCRIPT, REFERENCE_SCRIPT, referencePageHtml } from "../http/api-docs.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export function writeReferenceSite(directory: string): string[] {
  fs.rmSync(directory, { recursive: true, force: true });
  fs.mkdirSync(directory, { recursive: true });
  const document = JSON.parse(fs.readFileSync(path.join(ROOT, "generated/openapi.json"), "utf8")) as {
    info: { title: string };
  };
  const changelog = changelogDocuments({
    title: document.info.title,
    pageUrl: "./changelog.html",
    feedUrl: "./changelog.atom",
    referenceUrl: "./index.html",
  });
  const files: Record<string, string | Buffer> = {
    "index.html": referencePageHtml(document.info.title, {
      documentUrl: "./openapi.json",
      scriptUrl: "./scalar.js",
      initUrl: "./init.js",
      sameOriginServer: false,
      changelogUrl: "./changelog.html",
      feedUrl: "./changelog.atom",
    }),
    "changelog.html": changelog.page,
    "changelog.atom": changelog.feed,
    "init.js": REFERENCE_INIT_SCRIPT,
    "scalar.js": fs.readFileSync(REFERENCE_SCRIPT),
    "openapi.json": fs.readFileSync(path.join(ROOT, "generated/openapi.json")),
    "openapi.yaml": fs.readFileSync(path.join(ROOT, "openapi/openapi.yaml")),
  };
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(directory, name), content);
  return Object.keys(files);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const directory = path.resolve(process.argv[2] ?? path.join(ROOT, "openapi/reference-site"));
  const files = writeReferenceSite(directory);
  console.log(`wrote ${files.length} files to ${path.relative(process.cwd(), directory) || "."}/`);
}
