// The codegen check: the TypeScript generators integrators run over a published OpenAPI document, each
// over the bundled document (generated/openapi.json, or the file named as the first argument), and
// `tsc --strict` over what each wrote. The generators are pinned in scripts/codegen/package.json, installed
// apart from the service (`npm ci --prefix scripts/codegen`) so that its own install stays lean. Each runs
// with its usual options into a directory of its own under one temporary directory, whose `node_modules`
// links to scripts/codegen/node_modules (the runtimes some outputs import: zod and @zodios/core, axios,
// @oazapfts/runtime); the eight run side by side, as many at once as there are processors. Every failure is
// listed, naming the generator and its error; the temporary directory is kept when one fails.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const MODULES = path.join(HERE, "node_modules");
const BIN = path.join(MODULES, ".bin");

interface Generator {
  /** The npm package. */
  name: string;
  /** Its directory under the temporary one. */
  dir: string;
  /** The command (an entry of node_modules/.bin) and its arguments, run in `dir`, for the document at `input`. */
  command: (input: string) => [string, ...string[]];
}

/**
 * Each generator with its default options, but orval with its fetch client (its default needs axios). The
 * slowest come first, so that the lanes running them side by side end at about the same time.
 */
export const GENERATORS: readonly Generator[] = [
  {
    name: "openapi-zod-client",
    dir: "openapi-zod-client",
    command: (input) => ["openapi-zod-client", input, "-o", "api.ts"],
  },
  { name: "typed-openapi", dir: "typed-openapi", command: (input) => ["typed-openapi", input, "-o", "api.ts"] },
  {
    name: "@hey-api/openapi-ts",
    dir: "hey-api-openapi-ts",
    command: (input) => ["openapi-ts", "-i", input, "-o", "client"],
  },
  {
    name: "swagger-typescript-api",
    dir: "swagger-typescript-api",
    command: (input) => ["swagger-typescript-api", "generate", "-p", input, "-o", ".", "-n", "api.ts"],
  },
  {
    name: "openapi-typescript",
    dir: "openapi-typescript",
    command: (input) => ["openapi-typescript", input, "-o", "schema.ts"],
  },
  {
    name: "orval",
    dir: "orval",
    command: (input) => ["orval", "--input", input, "--output", "api.ts", "--client", "fetch"],
  },
  {
    name: "openapi-typescript-codegen",
    dir: "openapi-typescript-codegen",
    command: (input) => ["openapi", "--input", input, "--output", "client"],
  },
  { name: "oazapfts", dir: "oazapfts", command: (input) => ["oazapfts", input, "api.ts"] },
];

/** A generator or tsc that runs longer than this has hung: it fails, named, instead of holding CI. */
const STEP_TIMEOUT_MS = 120_000;

/** How the outputs are compiled: strict, as a bundler-based project of an integrator's would. */
const TSCONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: "es2022",
    module: "esnext",
    moduleResolution: "bundler",
    skipLibCheck: true,
    types: [],
  },
  include: ["**/*.ts"],
};

interface Outcome {
  name: string;
  /** Undefined when the output was generated and compiles. */
  failure?: string;
  generateMs: number;
  compileMs: number;
}

interface Run {
  code: number;
  output: string;
  ms: number;
}

/** Runs a Node script with this Node (the generators need 22.18 or later), its output kept. */
function runNode(args: string[], cwd: string): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      {
        cwd,
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
        timeout: STEP_TIMEOUT_MS,
        env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        const ended = error?.killed ? `\n(stopped after ${STEP_TIMEOUT_MS / 1000} s)` : "";
        resolve({ code, output: `${stdout}${stderr}${ended}`, ms: performance.now() - started });
      },
    );
  });
}

/** The first lines of a failure's output (each cut at 400 characters), enough to say what went wrong. */
function excerpt(output: string, lines = 15): string {
  const kept = output.trim().split("\n");
  const shown = kept.slice(0, lines).map((line) => `    ${line.length > 400 ? `${line.slice(0, 400)} …` : line}`);
  if (kept.length > lines) shown.push(`    … ${kept.length - lines} more lines`);
  return shown.join("\n");
}

function binOf(command: string): string {
  // The .bin entries are links to each package's script; Node runs the script it links to.
  return fs.realpathSync(path.join(BIN, command));
}

async function check(generator: Generator, input: string, work: string): Promise<Outcome> {
  const dir = path.join(work, generator.dir);
  fs.mkdirSync(dir);
  const [command, ...args] = generator.command(input);
  const generated = await runNode([binOf(command), ...args], dir);
  const written = fs.readdirSync(dir, { recursive: true }).filter((name) => String(name).endsWith(".ts"));
  if (generated.code !== 0 || written.length === 0)
    return {
      name: generator.name,
      failure: `generating failed (exit ${generated.code}, ${written.length} .ts files written):\n${excerpt(generated.output)}`,
      generateMs: generated.ms,
      compileMs: 0,
    };
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
  const compiled = await runNode([path.join(MODULES, "typescript/bin/tsc"), "-p", dir, "--pretty", "false"], dir);
  const errors = compiled.output.split("\n").filter((line) => / error TS\d+:/.test(line)).length;
  return {
    name: generator.name,
    ...(compiled.code === 0 ? {} : { failure: `tsc --strict failed (${errors} errors):\n${excerpt(compiled.output)}` }),
    generateMs: generated.ms,
    compileMs: compiled.ms,
  };
}

/** Runs `work` over `items`, at most `limit` at a time, keeping their order in the results. */
async function inParallel<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  });
  await Promise.all(lanes);
  return results;
}

export async function checkCodegen(input: string): Promise<{ outcomes: Outcome[]; work: string }> {
  if (!fs.existsSync(BIN))
    throw new Error("the generators are not installed: run `npm ci --prefix scripts/codegen` first");
  if (!fs.existsSync(input)) throw new Error(`no document at ${input}`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "codegen-"));
  fs.symlinkSync(MODULES, path.join(work, "node_modules"), "dir");
  const outcomes = await inParallel(GENERATORS, os.availableParallelism(), (generator) =>
    check(generator, input, work),
  );
  return { outcomes, work };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const input = path.resolve(process.argv[2] ?? path.join(ROOT, "generated/openapi.json"));
  const started = performance.now();
  const { outcomes, work } = await checkCodegen(input).catch((error: unknown) => {
    console.error(`codegen check: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  for (const outcome of outcomes)
    console.log(
      `${outcome.failure ? "FAIL" : "ok  "}  ${outcome.name.padEnd(27)} generate ${seconds(outcome.generateMs)}` +
        (outcome.compileMs > 0 ? `, tsc --strict ${seconds(outcome.compileMs)}` : ""),
    );
  const failed = outcomes.filter((outcome) => outcome.failure);
  const shown = input.startsWith(`${ROOT}/`) ? path.relative(ROOT, input) : input;
  const compiled = outcomes.length - failed.length;
  const summary = `${compiled} of ${outcomes.length} generators compile strict over ${shown}, in ${seconds(performance.now() - started)}`;
  if (failed.length === 0) {
    fs.rmSync(work, { recursive: true, force: true });
    console.log(summary);
  } else {
    for (const outcome of failed) console.error(`\n${outcome.name}: ${outcome.failure}`);
    console.error(`\n${summary}; the outputs are in ${work}`);
    process.exitCode = 1;
  }
}
