// The checks of the spec-first loop, each a function that reports what it found in lines a person can act
// on (the operation and the field where the document is concerned). scripts/check-contract.ts runs all
// of them (`npm run check:contract` once, `npm run dev` on every save of the document).
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { checkBreaking } from "./contract-check-breaking.ts";
import { latestRelease } from "./contract-release.ts";
import { render, staleFiles, writeOutputs } from "./generate.ts";
import { bundleDocument, describePointer, ROOT, SOURCE, type DocumentNode } from "./openapi-source.ts";

export interface StepResult {
  ok: boolean;
  /** What to show: on success a short summary, on failure every problem. */
  lines: string[];
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Writes generated/ from the document and portal/ (or, with `check`, only compares: CI fails when the
 * committed files differ from what the document generates). `rendered` is false when the document (or the
 * portal) does not generate at all.
 */
export async function generateStep(options: { check?: boolean } = {}): Promise<StepResult & { rendered: boolean }> {
  let outputs: Map<string, string>;
  try {
    outputs = await render();
  } catch (error) {
    return { ok: false, rendered: false, lines: [errorText(error)] };
  }
  if (options.check) {
    const stale = staleFiles(outputs);
    if (stale.length === 0) return { ok: true, rendered: true, lines: [`generated/ is up to date with ${SOURCE}`] };
    return {
      ok: false,
      rendered: true,
      lines: [
        `generated/ differs from what ${SOURCE} generates: run \`npm run generate\` and commit the result.`,
        ...stale.map((file) => `  ${file}`),
      ],
    };
  }
  const written = writeOutputs(outputs).filter((line) => line.startsWith("wrote"));
  return { ok: true, rendered: true, lines: written.length > 0 ? written : ["generated/ unchanged"] };
}

interface RedoclyProblem {
  ruleId: string;
  severity: string;
  message: string;
  location?: { pointer?: string; start?: { line: number; col: number } }[];
}

/** Runs a command and answers its exit status and output, whatever the status. */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(command, args, { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/**
 * Redocly's `recommended-strict` lint of the document (redocly.yaml), each problem with its operation. Redocly
 * runs as a process of its own, so the other checks run while it lints.
 */
export async function lintStep(root = ROOT): Promise<StepResult> {
  const cli = fs.realpathSync(path.join(root, "node_modules/.bin/redocly"));
  const linted = await run(process.execPath, [cli, "lint", SOURCE, "--format=json"], root, {
    ...process.env,
    REDOCLY_TELEMETRY: "off",
    REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
  });
  let report: { totals?: { errors: number; warnings: number }; problems?: RedoclyProblem[] };
  try {
    report = JSON.parse(linted.stdout) as typeof report;
  } catch {
    return {
      ok: false,
      lines: [`redocly lint did not report: ${(linted.stderr || linted.stdout).trim().slice(0, 2000)}`],
    };
  }
  const problems = report.problems ?? [];
  if (linted.status === 0 && problems.length === 0) return { ok: true, lines: ["no problems (recommended-strict)"] };
  let document: DocumentNode | undefined;
  try {
    document = bundleDocument(root);
  } catch {
    document = undefined;
  }
  return {
    ok: false,
    lines: problems.map((problem) => {
      const where = problem.location?.[0];
      const at = where?.start ? `${SOURCE}:${where.start.line}:${where.start.col}` : SOURCE;
      const about = where?.pointer && document ? ` (${describePointer(document, where.pointer)})` : "";
      return `${at} ${problem.severity} ${problem.ruleId}: ${problem.message}${about}`;
    }),
  };
}

/** The document as written against the last released one (scripts/contract-check-breaking.ts). */
export function breakingStep(root = ROOT): StepResult {
  try {
    const verdict = checkBreaking(latestRelease(root).document, bundleDocument(root));
    return { ok: verdict.ok, lines: [...verdict.changes.map((change) => `  ${change}`), verdict.message] };
  } catch (error) {
    return { ok: false, lines: [errorText(error)] };
  }
}

/** The TypeScript projects `npm run typecheck` checks: the service, tests and scripts; the portal (DOM). */
export const TYPESCRIPT_PROJECTS = ["tsconfig.json", "portal/tsconfig.json"];

/** Source files parsed once per process and reused while unchanged (the dev loop typechecks on every save). */
const parsed = new Map<string, { stamp: string; file: ts.SourceFile }>();

/** tsc's host (with the file hashes incremental checking compares), reading each unchanged file once. */
function cachingHost(options: ts.CompilerOptions): ts.CompilerHost {
  const host = ts.createIncrementalCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    let stamp: string;
    try {
      const stat = fs.statSync(fileName);
      stamp = `${stat.mtimeMs}:${stat.size}:${JSON.stringify(languageVersion)}`;
    } catch {
      return read(fileName, languageVersion, onError, shouldCreate);
    }
    const key = `${fileName}\0${JSON.stringify(languageVersion)}`;
    const known = parsed.get(key);
    if (known?.stamp === stamp) return known.file;
    const file = read(fileName, languageVersion, onError, shouldCreate);
    if (file) parsed.set(key, { stamp, file });
    return file;
  };
  return host;
}

function readProject(root: string, project: string): ts.ParsedCommandLine {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(root, project),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (!config) throw new Error(`${project} could not be read`);
  return config;
}

/**
 * The project's program (tsconfig.json of `root`), for the reads check run alone; with `rootNames`, only
 * those files and what they import, under the project's options.
 */
export function createProjectProgram(root = ROOT, project = "tsconfig.json", rootNames?: string[]): ts.Program {
  const config = readProject(root, project);
  return ts.createProgram({
    rootNames: rootNames?.map((name) => path.join(root, name)) ?? config.fileNames,
    options: config.options,
    projectReferences: config.projectReferences ?? [],
    host: cachingHost(config.options),
    configFileParsingDiagnostics: config.errors,
  });
}

/**
 * Where the typecheck keeps what it learnt (tsc --incremental's buildinfo: each file's hash, signature and
 * diagnostics): beside each project's tsconfig, where `tsc --incremental` puts it (git ignores it). Each
 * checkout keeps its own, also when several share one node_modules (git worktrees, the test suite's copies
 * of the repository), so that one checkout's check never makes another's start over.
 */
export function buildInfoFile(root: string, project: string): string {
  return path.join(root, project.replace(/\.json$/, ".tsbuildinfo"));
}

/** Each project's last check in this process, by path: the dev loop checks again from there. */
const lastChecks = new Map<string, ts.EmitAndSemanticDiagnosticsBuilderProgram>();

/**
 * The project checked incrementally, as `tsc --noEmit --incremental` does: only the files a change can
 * affect are checked again, from the last check in this process or else from the buildinfo on disk. A
 * file's change reaches the files that import it when its declarations change; `removeComments` leaves
 * comments out of that comparison (they never change a type), so a description edited in the document,
 * which changes only a comment in generated/openapi.ts, has that one file checked again rather than every
 * file that imports it. Nothing is emitted, so the option changes nothing else.
 */
function checkIncrementally(root: string, project: string): ts.EmitAndSemanticDiagnosticsBuilderProgram {
  const config = readProject(root, project);
  const options = {
    ...config.options,
    incremental: true,
    tsBuildInfoFile: buildInfoFile(root, project),
    removeComments: true,
  };
  const host = cachingHost(options);
  const key = path.join(root, project);
  const builder = ts.createEmitAndSemanticDiagnosticsBuilderProgram(
    config.fileNames,
    options,
    host,
    lastChecks.get(key) ?? ts.readBuilderProgram(options, host),
    config.errors,
    config.projectReferences,
  );
  lastChecks.set(key, builder);
  return builder;
}

const formatHost: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (name) => name,
  getCurrentDirectory: () => ROOT,
  getNewLine: () => "\n",
};

/**
 * `tsc --noEmit --incremental` of each project, in process (the buildinfo beside its tsconfig); `programs`
 * receives the service's program for the reads check.
 */
export function typecheckStep(root = ROOT, programs: { service?: ts.Program } = {}): StepResult {
  const lines: string[] = [];
  for (const project of TYPESCRIPT_PROJECTS) {
    const builder = checkIncrementally(root, project);
    if (project === "tsconfig.json") programs.service = builder.getProgram();
    const diagnostics = [
      ...builder.getConfigFileParsingDiagnostics(),
      ...builder.getOptionsDiagnostics(),
      ...builder.getGlobalDiagnostics(),
      ...builder.getSyntacticDiagnostics(),
      ...builder.getSemanticDiagnostics(),
    ];
    // With noEmit, emitting writes the buildinfo alone.
    builder.emit();
    if (diagnostics.length > 0) {
      const host = { ...formatHost, getCurrentDirectory: () => root };
      lines.push(...ts.formatDiagnostics(diagnostics, host).trimEnd().split("\n"));
    }
  }
  if (lines.length > 0) return { ok: false, lines };
  return { ok: true, lines: [`no type errors (${TYPESCRIPT_PROJECTS.join(", ")})`] };
}
