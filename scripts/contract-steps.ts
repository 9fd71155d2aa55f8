// The steps of the spec-first loop, each a function that reports what it found in lines a person can act
// on (the operation and the field where the document is concerned): `npm run check:contract` runs them in
// order and stops at the first that fails; `npm run dev` runs generate, lint and typecheck on a change of
// the document.
import { spawnSync } from "node:child_process";
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
 * committed files differ from what the document generates).
 */
export async function generateStep(options: { check?: boolean } = {}): Promise<StepResult> {
  let outputs: Map<string, string>;
  try {
    outputs = await render();
  } catch (error) {
    return { ok: false, lines: [errorText(error)] };
  }
  if (options.check) {
    const stale = staleFiles(outputs);
    if (stale.length === 0) return { ok: true, lines: [`generated/ is up to date with ${SOURCE}`] };
    return {
      ok: false,
      lines: [
        `generated/ differs from what ${SOURCE} generates: run \`npm run generate\` and commit the result.`,
        ...stale.map((file) => `  ${file}`),
      ],
    };
  }
  const written = writeOutputs(outputs).filter((line) => line.startsWith("wrote"));
  return { ok: true, lines: written.length > 0 ? written : ["generated/ unchanged"] };
}

interface RedoclyProblem {
  ruleId: string;
  severity: string;
  message: string;
  location?: { pointer?: string; start?: { line: number; col: number } }[];
}

/** Redocly's `recommended-strict` lint of the document (redocly.yaml), each problem with its operation. */
export function lintStep(root = ROOT): StepResult {
  const cli = fs.realpathSync(path.join(root, "node_modules/.bin/redocly"));
  const run = spawnSync(process.execPath, [cli, "lint", SOURCE, "--format=json"], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
  });
  let report: { totals?: { errors: number; warnings: number }; problems?: RedoclyProblem[] };
  try {
    report = JSON.parse(run.stdout) as typeof report;
  } catch {
    return { ok: false, lines: [`redocly lint did not report: ${(run.stderr || run.stdout).trim().slice(0, 2000)}`] };
  }
  const problems = report.problems ?? [];
  if (run.status === 0 && problems.length === 0) return { ok: true, lines: ["no problems (recommended-strict)"] };
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

/** Source files parsed once per process and reused while unchanged (the dev loop typechecks on every change). */
const parsed = new Map<string, { stamp: string; file: ts.SourceFile }>();

function cachingHost(options: ts.CompilerOptions): ts.CompilerHost {
  const host = ts.createCompilerHost(options, true);
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

/**
 * The project's program (tsconfig.json of `root`), for the typecheck and for the reads check; with
 * `rootNames`, only those files and what they import, under the project's options.
 */
export function createProjectProgram(root = ROOT, project = "tsconfig.json", rootNames?: string[]): ts.Program {
  const configPath = path.join(root, project);
  const config = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (!config) throw new Error(`${project} could not be read`);
  return ts.createProgram({
    rootNames: rootNames?.map((name) => path.join(root, name)) ?? config.fileNames,
    options: config.options,
    projectReferences: config.projectReferences ?? [],
    host: cachingHost(config.options),
    configFileParsingDiagnostics: config.errors,
  });
}

const formatHost: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (name) => name,
  getCurrentDirectory: () => ROOT,
  getNewLine: () => "\n",
};

/** `tsc --noEmit` of each project, in process; `programs` receives the service's program for later steps. */
export function typecheckStep(root = ROOT, programs: { service?: ts.Program } = {}): StepResult {
  const lines: string[] = [];
  for (const project of TYPESCRIPT_PROJECTS) {
    const program = createProjectProgram(root, project);
    if (project === "tsconfig.json") programs.service = program;
    const diagnostics = [...program.getConfigFileParsingDiagnostics(), ...ts.getPreEmitDiagnostics(program)];
    if (diagnostics.length > 0) {
      const host = { ...formatHost, getCurrentDirectory: () => root };
      lines.push(...ts.formatDiagnostics(diagnostics, host).trimEnd().split("\n"));
    }
  }
  if (lines.length > 0) return { ok: false, lines };
  return { ok: true, lines: [`no type errors (${TYPESCRIPT_PROJECTS.join(", ")})`] };
}
