// The documents say what the code does: the settings table of docs/operating.md is the one foundation/config.ts
// declares (npm run generate rewrites it), docs/integrating.md lists the default MIME types, every
// relative link names a file (and heading) of the repository, every citation of docs/decisions.md in the
// code names one of its sections, nothing cites an issue tracker the repository does not hold, and
// CONTRIBUTING's table of npm scripts is package.json's (fifteen at most, in one naming scheme).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { SETTINGS_DOCUMENT, withSettingsTable } from "../../scripts/settings-table.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");

/** The Markdown documents of the repository (the contract package's README aside: it ships on its own). */
const DOCUMENTS = [
  "README.md",
  "CONTRIBUTING.md",
  "CHANGELOG.md",
  ...fs
    .readdirSync(path.join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/**
 * The repository's own files, by their path from the root: what git tracks, and new files it does not ignore
 * (never an install such as scripts/codegen/node_modules, nor run-time data or build output).
 */
const PROJECT_FILES = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
  cwd: ROOT,
  encoding: "utf8",
  maxBuffer: 64 * 1024 * 1024,
})
  .split("\0")
  .filter((file) => file !== "" && fs.existsSync(path.join(ROOT, file)));

/** Every file of the service, its tooling and tests that may carry a comment citing a document. */
function codeFiles(): string[] {
  const folders = ["app", "admin", "foundation", "http", "handlers", "worker", "portal", "db", "scripts", "test"];
  const code = PROJECT_FILES.filter(
    (file) => folders.includes(file.split("/")[0] ?? "") && /\.(ts|js|cjs|sql)$/.test(file),
  );
  const root = [".dependency-cruiser.cjs", "eslint.config.js", "Dockerfile", "compose.yaml", ".ci/run"];
  return [...code, ...root.filter((file) => PROJECT_FILES.includes(file))];
}

/** Names of documents that are not in the repository (spelt in pieces so that this file does not cite them). */
const MISSING_DOCUMENTS = ["contract decisions" + " §", "contract-decisions" + ".md", "BENCHMARKS" + ".md"];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (heading?.[1]) found.add(slug(heading[1]));
  }
  return found;
}

t.test(
  "docs/operating.md lists every setting with its default and meaning, as foundation/config.ts declares them",
  async (t) => {
    const document = fs.readFileSync(SETTINGS_DOCUMENT, "utf8");
    t.equal(document, withSettingsTable(document), "run `npm run generate` after changing a setting");
    t.notMatch(read("README.md"), /<!-- settings:start -->/, "one settings table, in docs/operating.md");
  },
);

t.test("docs/integrating.md shows the default MIME list intake accepts", async (t) => {
  const { DEFAULT_MIME_TYPES } = await import("../../foundation/config.ts");
  const guide = read("docs/integrating.md");
  for (const type of DEFAULT_MIME_TYPES) t.match(guide, `\`${type}\``, type);
});

t.test("no document states a Node version other than the minimum engines declares", async (t) => {
  const minimumOf = (file: string) =>
    /^>=(\d+(?:\.\d+)?)$/.exec((JSON.parse(read(file)) as { engines: { node: string } }).engines.node)?.[1];
  const service = minimumOf("package.json");
  const contractPackage = minimumOf("openapi/package/package.json");
  t.ok(service && contractPackage, "each engines.node is >=X or >=X.Y");
  // The contract package runs where its own engines says: its README, and the section of a document about it.
  const sections = [
    ...DOCUMENTS.flatMap((file) =>
      read(file)
        .split(/^(?=## )/m)
        .map((text) => ({ file, text, minimum: /^## The contract package/.test(text) ? contractPackage : service })),
    ),
    { file: "openapi/package/README.md", text: read("openapi/package/README.md"), minimum: contractPackage },
  ];
  for (const { file, text, minimum } of sections) {
    for (const [statement] of text.matchAll(/Node(?:\.js)? \d+(?:\.\d+)? or newer/g))
      t.equal(statement, `Node.js ${minimum} or newer`, file);
  }
});

t.test("every relative link of the documents names a file of the repository, and a heading of it", async (t) => {
  let links = 0;
  for (const file of DOCUMENTS) {
    const markdown = read(file).replace(/```[\s\S]*?```/g, "");
    for (const [, target = ""] of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      links++;
      const [linked = "", anchor] = target.split("#");
      const resolved =
        linked === "" ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), linked);
      if (!fs.existsSync(resolved)) {
        t.fail(`${file} links to ${target}, which does not exist`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith(".md"))
        t.ok(anchors(fs.readFileSync(resolved, "utf8")).has(anchor), `${file}: ${target} names a heading`);
    }
  }
  t.ok(links > 20, `the documents link to each other (${links} links)`);
});

t.test("every citation of docs/decisions.md names one of its sections", async (t) => {
  const sections = new Set([...read("docs/decisions.md").matchAll(/^## (\d+)\. /gm)].map((match) => Number(match[1])));
  t.same([...sections], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], "the sections keep their numbers");
  let citations = 0;
  for (const file of [...codeFiles(), ...DOCUMENTS]) {
    const text = read(file);
    for (const [cited = ""] of text.matchAll(/docs\/decisions\.md §\d+(?:(?:, | and )§\d+)*/g)) {
      for (const [, number] of cited.matchAll(/§(\d+)/g)) {
        citations++;
        t.ok(sections.has(Number(number)), `${file}: ${cited}`);
      }
    }
    // The decisions were once a document outside the repository; nothing may point there, or at the
    // benchmark diary docs/performance.md replaced.
    for (const missing of MISSING_DOCUMENTS) t.notOk(text.includes(missing), `${file} does not cite ${missing}`);
  }
  t.ok(citations > 20, `the code cites the decisions (${citations} citations)`);
});

/** Every text file of the repository, by its path from the root. */
function textFiles(): string[] {
  return PROJECT_FILES.filter(
    (file) =>
      !file.startsWith("openapi/reference-site/") &&
      /\.(ts|mjs|cjs|js|sql|md|ya?ml|json|txt)$|^(Dockerfile|\.ci\/run|\.npmrc)$/.test(file),
  );
}

/** Not read: merged migrations, which never change (test/db/migration-checksums.test.ts). */
const NOT_READ = [/^db\/migrations\/\d{4}_\w+\.ts$/];

/** How a comment or a document would point at an issue tracker: an issue, task or finding by number, or `#12`. */
const TRACKER_REFERENCE = /\b(?:issues?|tasks?|findings?|tickets?) #?\d+\b|(?:^|[\s(])#\d+\b/gim;

t.test(
  "no file cites an issue tracker the repository does not hold; each says what the code does instead",
  async (t) => {
    const files = textFiles().filter((file) => !NOT_READ.some((pattern) => pattern.test(file)));
    t.ok(files.length > 300, `every text file is read (${files.length})`);
    const citations = files.flatMap((file) =>
      [...read(file).matchAll(TRACKER_REFERENCE)].map((match) => `${file}: ${match[0].trim()}`),
    );
    t.same(citations, [], "say what the code does and why, without pointing elsewhere");
  },
);

t.test("every npm script is in CONTRIBUTING's table, fifteen at most, named verb or verb:what", async (t) => {
  const scripts = Object.keys((JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts);
  t.ok(scripts.length <= 15, `a newcomer reads ${scripts.length} scripts`);
  t.same(
    scripts.filter((name) => !/^[a-z]+(?::[a-z]+)?$/.test(name)),
    [],
    "one naming scheme",
  );
  const section = read("CONTRIBUTING.md").split("## The npm scripts")[1]?.split("\n## ")[0] ?? "";
  const listed = new Set(
    [...section.matchAll(/`npm (?:run )?([a-z:]+)/g)].map((match) => match[1] ?? "").filter((name) => name !== "run"),
  );
  t.same(
    scripts.filter((name) => !listed.has(name)),
    [],
    "each in CONTRIBUTING's table",
  );
  t.same(
    [...listed].filter((name) => !scripts.includes(name)),
    [],
    "and the table names no script that is gone",
  );
});
