// `npm run check:contract`: what CI runs on the contract, as one command, in the order a change flows:
//   1. generate   generated/ from openapi/openapi.yaml (with `--check`, as CI runs it: only compare, and
//                 fail when the committed generated/ differs from what the document generates)
//   2. lint       Redocly, recommended-strict (redocly.yaml)
//   3. breaking   the document as written against the last released one (the newest openapi/released/*.json)
//   4. typecheck  tsc --noEmit --incremental of the service and of the portal, in process
//   5. reads      every parameter and body field the document declares is read by its operation's handler
//                 (scripts/contract-check-reads.ts, on the typecheck's program)
// Every check runs, and each prints what it found: the operation and the field for the document's checks,
// file and line for the typecheck; the last line counts the failures. Exit code 0 when every check passed,
// else 1. Lint runs in a process of its own beside the others. A document that does not generate leaves
// typecheck and reads without generated code to check, so they are reported as not run. `npm run dev` runs
// the same checks (runContractChecks) on every save of the document.
import { performance } from "node:perf_hooks";
import type ts from "typescript";
import { readsStep } from "./contract-check-reads.ts";
import { breakingStep, generateStep, lintStep, typecheckStep, type StepResult } from "./contract-steps.ts";

export interface CheckOutcome {
  name: string;
  what: string;
  /** undefined when the check could not run; `notRun` says why. */
  result: StepResult | undefined;
  notRun?: string;
  seconds: number;
}

export const CHECK_COUNT = 5;

/** A check's result and how long it took, with a thrown error as its failure. */
async function timed(step: () => Promise<StepResult> | StepResult): Promise<{ result: StepResult; seconds: number }> {
  const started = performance.now();
  let result: StepResult;
  try {
    result = await step();
  } catch (error) {
    result = { ok: false, lines: [error instanceof Error ? (error.stack ?? error.message) : String(error)] };
  }
  return { result, seconds: (performance.now() - started) / 1000 };
}

/**
 * Runs every check of the document and hands each outcome to `report` in the order above, as soon as it
 * and those before it are known; answers all of them.
 */
export async function runContractChecks(options: {
  check?: boolean;
  report: (outcome: CheckOutcome, index: number) => void;
}): Promise<CheckOutcome[]> {
  const outcomes: CheckOutcome[] = [];
  const settle = (name: string, what: string, ran: { result: StepResult; seconds: number } | { notRun: string }) => {
    outcomes.push(
      "notRun" in ran ? { name, what, result: undefined, notRun: ran.notRun, seconds: 0 } : { name, what, ...ran },
    );
    options.report(outcomes.at(-1) as CheckOutcome, outcomes.length - 1);
  };

  // Redocly starts first, in a process of its own, and lints while this one generates and checks.
  const linting = timed(() => lintStep());
  let rendered = false;
  settle(
    "generate",
    options.check ? "generated/ matches the document" : "generated/ from the document",
    await timed(async () => {
      const generated = await generateStep({ check: options.check === true });
      rendered = generated.rendered;
      return generated;
    }),
  );
  settle("lint", "Redocly lint of the document", await linting);
  settle("breaking", "no breaking change against the released document", await timed(() => breakingStep()));

  const programs: { service?: ts.Program } = {};
  const notRun = { notRun: "the document does not generate, so there is no code to check" };
  settle(
    "typecheck",
    "tsc --noEmit (service, tests, scripts, portal)",
    rendered ? await timed(() => typecheckStep(undefined, programs)) : notRun,
  );
  settle(
    "reads",
    "every declared parameter and body field is read by its handler",
    rendered ? await timed(() => readsStep(undefined, programs.service)) : notRun,
  );
  return outcomes;
}

/** The last line: every check passed, or how many failed and which. */
export function verdict(outcomes: readonly CheckOutcome[]): { ok: boolean; line: string } {
  const failed = outcomes.filter((outcome) => outcome.result?.ok === false).map((outcome) => outcome.name);
  const notRun = outcomes.filter((outcome) => outcome.result === undefined).map((outcome) => outcome.name);
  if (failed.length === 0 && notRun.length === 0) return { ok: true, line: `all ${outcomes.length} checks passed` };
  const skipped = notRun.length > 0 ? `; ${notRun.join(" and ")} not run` : "";
  return { ok: false, line: `${failed.length} of ${outcomes.length} checks failed (${failed.join(", ")})${skipped}` };
}

/** A check's heading line: ✓, ✗, or – for one that did not run. */
export function headline(outcome: CheckOutcome, label = outcome.name): string {
  if (!outcome.result) return `– ${label}: not run: ${outcome.notRun ?? ""}`;
  return `${outcome.result.ok ? "✓" : "✗"} ${label}: ${outcome.what} (${outcome.seconds.toFixed(1)} s)`;
}

export async function checkContract(options: { check: boolean }): Promise<boolean> {
  const started = performance.now();
  const outcomes = await runContractChecks({
    check: options.check,
    report: (outcome, index) => {
      console.log(headline(outcome, `${index + 1}/${CHECK_COUNT} ${outcome.name}`));
      for (const line of outcome.result?.lines ?? []) console.log(`    ${line}`);
    },
  });
  const { ok, line } = verdict(outcomes);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`check:contract: ${line} in ${seconds} s${ok ? "." : "; fix them and run it again."}`);
  return ok;
}

if (import.meta.url === `file://${process.argv[1]}`)
  checkContract({ check: process.argv.includes("--check") }).then(
    (ok) => process.exit(ok ? 0 : 1),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
