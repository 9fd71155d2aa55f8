// Builds the contract package (openapi/package) into openapi/package/dist, with no server code in it:
//   openapi.json, openapi.yaml   the bundled document (generated/openapi.json) and the hand-written source
//   openapi.d.ts, openapi.js     the types openapi-typescript writes (generated/openapi.ts), as declarations
//   index.js, index.d.ts, ...    the SDK (openapi/package/src/*.ts: the typed client, the token provider,
//                                retries, webhook verification) compiled by tsc
// `--pack DIR` then runs `npm pack` of the package into DIR and prints the tarball's path.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const PACKAGE_DIR = path.join(ROOT, "openapi/package");
const DIST = path.join(PACKAGE_DIR, "dist");
const STAGING = path.join(PACKAGE_DIR, ".build");
/** How the client's source names the generated types in the repository, and in the package. */
const REPOSITORY_TYPES = "../../../generated/openapi.ts";
const PACKAGE_TYPES = "./openapi.js";

export function buildContractPackage(): void {
  const document = JSON.parse(fs.readFileSync(path.join(ROOT, "generated/openapi.json"), "utf8")) as {
    info: { version: string };
  };
  const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8")) as { version: string };
  if (manifest.version !== document.info.version)
    throw new Error(
      `openapi/package/package.json version ${manifest.version} differs from the document's info.version ${document.info.version}`,
    );

  fs.rmSync(DIST, { recursive: true, force: true });
  fs.rmSync(STAGING, { recursive: true, force: true });
  fs.mkdirSync(STAGING, { recursive: true });
  const sources = fs.readdirSync(path.join(PACKAGE_DIR, "src")).filter((name) => name.endsWith(".ts"));
  for (const name of sources) {
    const source = fs.readFileSync(path.join(PACKAGE_DIR, "src", name), "utf8");
    if (name === "index.ts" && !source.includes(`"${REPOSITORY_TYPES}"`))
      throw new Error(`openapi/package/src/index.ts must import the types from "${REPOSITORY_TYPES}"`);
    // The sources import each other as `./name.ts`, as the repository runs them; the package's files are `.js`.
    const packaged = source
      .replaceAll(`"${REPOSITORY_TYPES}"`, `"${PACKAGE_TYPES}"`)
      .replace(/(from "\.\/[\w-]+)\.ts"/g, '$1.js"');
    fs.writeFileSync(path.join(STAGING, name), packaged);
  }
  fs.copyFileSync(path.join(ROOT, "generated/openapi.ts"), path.join(STAGING, "openapi.ts"));

  const staged = [...sources, "openapi.ts"].map((name) => path.join(STAGING, name));
  const program = ts.createProgram(staged, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    declaration: true,
    strict: true,
    skipLibCheck: true,
    verbatimModuleSyntax: true,
    types: [],
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    rootDir: STAGING,
    outDir: DIST,
    newLine: ts.NewLineKind.LineFeed,
  });
  const emitted = program.emit();
  const problems = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics];
  fs.rmSync(STAGING, { recursive: true, force: true });
  if (problems.length > 0)
    throw new Error(
      ts.formatDiagnostics(problems, {
        getCanonicalFileName: (name) => name,
        getCurrentDirectory: () => ROOT,
        getNewLine: () => "\n",
      }),
    );
  fs.copyFileSync(path.join(ROOT, "generated/openapi.json"), path.join(DIST, "openapi.json"));
  fs.copyFileSync(path.join(ROOT, "openapi/openapi.yaml"), path.join(DIST, "openapi.yaml"));
}

/** Packs the built package into `directory`; returns the tarball's path. */
export function packContractPackage(directory: string): string {
  const output = execFileSync("npm", ["pack", "--json", "--pack-destination", directory], {
    cwd: PACKAGE_DIR,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [packed] = JSON.parse(output) as { filename: string }[];
  if (!packed) throw new Error("npm pack reported no tarball");
  return path.join(directory, packed.filename);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildContractPackage();
  console.log(`built     ${path.relative(ROOT, DIST)}/`);
  const packAt = process.argv.indexOf("--pack");
  if (packAt !== -1) {
    const directory = path.resolve(process.argv[packAt + 1] ?? ".");
    fs.mkdirSync(directory, { recursive: true });
    console.log(packContractPackage(directory));
  }
}
