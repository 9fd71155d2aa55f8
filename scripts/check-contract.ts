// `npm run check:contract`: what CI runs on the contract, as one command, in the order a change flows:
//   1. generate   generated/ from openapi/openapi.yaml (with `--check`, as CI runs it: only compare, and
//                 fail when the committed generated/ differs from what the document generates)
//   2. lint       Redocly, recommended-strict (redocly.yaml)
//   3. breaking   the document as written against the last released one (openapi/released/openapi.json)
//   4. typecheck  tsc --noEmit of the service and of the portal, in process
//   5. reads      every parameter and body field the document declares is read by its operation's handler
//                 (scripts/contract-check-reads.ts, on the typecheck's program)
// It stops at the first step that fails and prints what that step found: the operation and the field for
// the document's steps, file and line for the typecheck. Exit code 0 when every step passed, else 1.
import { performance } from "node:perf_hooks";
import type ts from "typescript";
import { readsStep } from "./contract-check-reads.ts";
import { breakingStep, generateStep, lintStep, typecheckStep, type StepResult } from "./contract-steps.ts";

interface Step {
  name: string;
  what: string;
  run: () => Promise<StepResult> | StepResult;
}

export async function checkContract(options: { check: boolean }): Promise<boolean> {
  const programs: { service?: ts.Program } = {};
  const steps: Step[] = [
    {
      name: "generate",
      what: options.check ? "generated/ matches the document" : "generated/ from the document",
      run: () => generateStep({ check: options.check }),
    },
    { name: "lint", what: "Redocly lint of the document", run: () => lintStep() },
    { name: "breaking", what: "no breaking change against the released document", run: () => breakingStep() },
    {
      name: "typecheck",
      what: "tsc --noEmit (service, tests, scripts, portal)",
      run: () => typecheckStep(undefined, programs),
    },
    {
      name: "reads",
      what: "every declared parameter and body field is read by its handler",
      run: () => readsStep(undefined, programs.service),
    },
  ];
  const started = performance.now();
  for (const [index, step] of steps.entries()) {
    const start = performance.now();
    let result: StepResult;
    try {
      result = await step.run();
    } catch (error) {
      result = { ok: false, lines: [error instanceof Error ? (error.stack ?? error.message) : String(error)] };
    }
    const seconds = ((performance.now() - start) / 1000).toFixed(1);
    const label = `${index + 1}/${steps.length} ${step.name}`;
    if (!result.ok) {
      console.log(`✗ ${label}: ${step.what} (${seconds} s)`);
      for (const line of result.lines) console.log(`    ${line}`);
      console.log(`check:contract stopped at ${step.name}; fix the above and run it again.`);
      return false;
    }
    console.log(`✓ ${label}: ${step.what} (${seconds} s)`);
    for (const line of result.lines) console.log(`    ${line}`);
  }
  console.log(`check:contract passed in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
  return true;
}

if (import.meta.url === `file://${process.argv[1]}`)
  checkContract({ check: process.argv.includes("--check") }).then(
    (ok) => process.exit(ok ? 0 : 1),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
