// Builds the contract package (openapi/package) into openapi/package/dist, with no server code in it:
//   openapi.json, openapi.yaml   the bundled document (generated/openapi.json) and the hand-written source
//   openapi.d.ts, openapi.js     the types openapi-typescript writes (generated/openapi.ts), as declarations
//   index.js, index.d.ts, ...    the SDK (openapi/package/src/*.ts: the typed client, the token provider,
//                                retries, webhook verification) compiled by tsc
//   cli/main.js, ...             the package's command (openapi/package/cli/*.ts: `listen`, the local
//                                forwarder of webhook deliveries), compiled by tsc with Node's types, the
//                                package's `bin`
// `--pack DIR` then runs `npm pack` of the package into DIR and prints the tarball's path. A test builds a
// copy of the package in a directory of its own instead (`buildContractPackage(dir)`), so that builds
// running at once do not share files: each stages its sources in a directory of its own under .build/.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const PACKAGE_DIR = path.join(ROOT, "openapi/package");
/** Where sources are staged: inside the repository, so that their imports resolve in its node_modules. */
const STAGING_ROOT = path.join(PACKAGE_DIR, ".build");
/** What a copy of the package built elsewhere holds beside its dist/. */
const PACKAGE_FILES = ["package.json", "README.md", "LICENSE"];
/** How the command's source names the SDK in the repository, and in the package. */
const REPOSITORY_SDK = "../src/index.ts";
const PACKAGE_SDK = "../index.js";
/** How the client's source names the generated types in the repository, and in the package. */
const REPOSITORY_TYPES = "../../../generated/openapi.ts";
const PACKAGE_TYPES = "./openapi.js";

/** Builds the package into `packageDir`/dist: openapi/package itself, or a copy of it (its manifest, README and licence). */
export function buildContractPackage(packageDir = PACKAGE_DIR): void {
  const DIST = path.join(packageDir, "dist");
  const STAGING = path.join(STAGING_ROOT, `${process.pid}-${randomBytes(4).toString("hex")}`);
  const document = JSON.parse(fs.readFileSync(path.join(ROOT, "generated/openapi.json"), "utf8")) as {
    info: { version: string };
  };
  const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8")) as { version: string };
  if (manifest.version !== document.info.version)
    throw new Error(
      `openapi/package/package.json version ${manifest.version} differs from the document's info.version ${document.info.version}`,
    );

  if (packageDir !== PACKAGE_DIR) {
    fs.mkdirSync(packageDir, { recursive: true });
    for (const name of PACKAGE_FILES) fs.copyFileSync(path.join(PACKAGE_DIR, name), path.join(packageDir, name));
  }
  fs.rmSync(DIST, { recursive: true, force: true });
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
  const commandSources = fs.readdirSync(path.join(PACKAGE_DIR, "cli")).filter((name) => name.endsWith(".ts"));
  fs.mkdirSync(path.join(STAGING, "cli"));
  for (const name of commandSources) {
    const source = fs.readFileSync(path.join(PACKAGE_DIR, "cli", name), "utf8");
    const packaged = source
      .replaceAll(`"${REPOSITORY_SDK}"`, `"${PACKAGE_SDK}"`)
      .replace(/(from "\.\/[\w-]+)\.ts"/g, '$1.js"');
    fs.writeFileSync(path.join(STAGING, "cli", name), packaged);
  }

  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    skipLibCheck: true,
    verbatimModuleSyntax: true,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    rootDir: STAGING,
    outDir: DIST,
    newLine: ts.NewLineKind.LineFeed,
  };
  // One host for both programs, which parses each file once: the libraries' declarations and the SDK's
  // sources are in both.
  const host = ts.createCompilerHost(options);
  const parse = host.getSourceFile.bind(host);
  const parsed = new Map<string, ts.SourceFile | undefined>();
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const key = `${fileName}\0${JSON.stringify(languageVersion)}`;
    if (!parsed.has(key)) parsed.set(key, parse(fileName, languageVersion, onError, shouldCreate));
    return parsed.get(key);
  };
  // The SDK runs in browsers too: compiled without Node's types, with its declarations. The command runs on
  // Node: with Node's types and without declarations (it emits the SDK's JavaScript again, the same).
  const programs = [
    ts.createProgram(
      [...sources, "openapi.ts"].map((name) => path.join(STAGING, name)),
      { ...options, declaration: true, types: [] },
      host,
    ),
    ts.createProgram(
      commandSources.map((name) => path.join(STAGING, "cli", name)),
      { ...options, declaration: false, types: ["node"] },
      host,
    ),
  ];
  const problems = programs.flatMap((program) => [...ts.getPreEmitDiagnostics(program), ...program.emit().diagnostics]);
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

/** Packs the package built in `packageDir` into `directory`; returns the tarball's path. */
export function packContractPackage(directory: string, packageDir = PACKAGE_DIR): string {
  const output = execFileSync("npm", ["pack", "--json", "--pack-destination", directory], {
    cwd: packageDir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [packed] = JSON.parse(output) as { filename: string }[];
  if (!packed) throw new Error("npm pack reported no tarball");
  return path.join(directory, packed.filename);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildContractPackage();
  console.log(`built     ${path.relative(ROOT, path.join(PACKAGE_DIR, "dist"))}/`);
  const packAt = process.argv.indexOf("--pack");
  if (packAt !== -1) {
    const directory = path.resolve(process.argv[packAt + 1] ?? ".");
    fs.mkdirSync(directory, { recursive: true });
    console.log(packContractPackage(directory));
  }
}
