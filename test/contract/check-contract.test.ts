// npm run check:contract: generate, lint, breaking-change check, typecheck and reads in one command that runs
// every check, lists every failure (naming the operation and field, or file and line) and counts them on its
// last line, run on copies of the repository with the document edited the way a team edits it.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { copyRepository, editFile, keepBuildInfo, ROOT } from "../helpers/repository-copy.ts";

// Each case runs the project's own tools on a copy of the repository: minutes on a busy machine.
t.setTimeout(600_000);

const EVENT_TYPE_PARAMETER = `        - name: event_type
          in: query
          required: false
          description: Only deliveries of this event kind.
          schema:
            $ref: '#/components/schemas/WebhookDeliveredEventKind'
          examples:
            example:
              value: intake.submitted
              x-disabled: true
`;

function run(cwd: string, script: string, args: string[] = []) {
  const result = spawnSync(process.execPath, [path.join(cwd, "scripts", script), ...args], {
    cwd,
    encoding: "utf8",
    timeout: 500_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

// Two edits on one copy, one after the other: the second typecheck starts from the first one's buildinfo
// (the copy's own), as a team's next check does, instead of checking every file again.
t.test("one copy edited twice, as a team edits the document", async (t) => {
  const copy = copyRepository(t);
  await t.test(
    "with --check (CI) a document edited but not regenerated fails the first step, and a lint problem beside it names its operation",
    async (t) => {
      editFile(copy, "openapi/openapi.yaml", "      summary: Composite health report (legacy)\n", "");
      const check = run(copy, "check-contract.ts", ["--check"]);
      t.equal(check.status, 1, check.output);
      t.match(check.output, /✗ 1\/5 generate/);
      t.match(check.output, "run `npm run generate` and commit the result");
      t.match(check.output, "generated/openapi.json");
      t.match(check.output, /✗ 2\/5 lint/, "the other checks run all the same");
      t.match(check.output, /openapi\/openapi\.yaml:\d+:\d+ error operation-summary/);
      t.match(check.output, "operation getHealth (GET /v1/health)");
      t.match(check.output, /✓ 3\/5 breaking/);
      t.match(check.output, /✓ 4\/5 typecheck/);
      t.match(check.output, "check:contract: 2 of 5 checks failed (generate, lint)");
      // Only the document was edited: the buildinfo is the checkout's code's, for the next run's copies.
      if (/✓ 4\/5 typecheck/.test(check.output)) keepBuildInfo(copy);
    },
  );

  // The document as committed again, then the next edit.
  fs.copyFileSync(path.join(ROOT, "openapi/openapi.yaml"), path.join(copy, "openapi/openapi.yaml"));
  await t.test(
    "a breaking edit of the YAML is reported before anything is regenerated, naming operation and field",
    async (t) => {
      const generatedBefore = fs.readFileSync(path.join(copy, "generated/openapi.json"), "utf8");
      editFile(copy, "openapi/openapi.yaml", EVENT_TYPE_PARAMETER, "");

      const breaking = run(copy, "contract-check-breaking.ts");
      t.equal(breaking.status, 1, breaking.output);
      t.match(
        breaking.output,
        "GET /v1/webhooks/deliveries: parameter query:event_type removed (listWebhookDeliveries)",
        "the breaking-change check reads the YAML itself",
      );
      t.equal(
        fs.readFileSync(path.join(copy, "generated/openapi.json"), "utf8"),
        generatedBefore,
        "nothing was regenerated",
      );

      // The same edit breaks two checks: a released parameter is gone, and the handler still reads it.
      const check = run(copy, "check-contract.ts");
      t.equal(check.status, 1, check.output);
      t.match(check.output, /✓ 1\/5 generate/);
      t.match(check.output, /✓ 2\/5 lint/);
      t.match(check.output, /✗ 3\/5 breaking/);
      t.match(check.output, "parameter query:event_type removed (listWebhookDeliveries)");
      t.match(check.output, /✗ 4\/5 typecheck/, "the check after the failed one runs too");
      t.match(check.output, /handlers\/webhooks\/deliveries\.ts\(\d+,\d+\): error TS\d+: .*event_type/);
      t.match(check.output, /[✓✗] 5\/5 reads/);
      t.match(check.output, /check:contract: 2 of 5 checks failed \(breaking, typecheck\) in [\d.]+ s; fix them/);
    },
  );
});

t.test("a document that does not generate: every check that can run reports, the rest say why not", async (t) => {
  const copy = copyRepository(t);
  editFile(
    copy,
    "openapi/openapi.yaml",
    "      summary: Composite health report (legacy)\n",
    "      summary: [unclosed\n",
  );
  const check = run(copy, "check-contract.ts");
  t.equal(check.status, 1, check.output);
  t.match(check.output, /✗ 1\/5 generate/);
  t.match(check.output, /✗ 2\/5 lint/);
  t.match(check.output, /✗ 3\/5 breaking/);
  t.match(check.output, "is not valid YAML");
  t.match(check.output, "– 4/5 typecheck: not run: the document does not generate");
  t.match(check.output, "– 5/5 reads: not run");
  t.match(check.output, "check:contract: 3 of 5 checks failed (generate, lint, breaking); typecheck and reads not run");
});

t.test("a change in a component schema names the operations that use it", async (t) => {
  const copy = copyRepository(t);
  editFile(copy, "openapi/openapi.yaml", "      required: [url, events]\n", "      required: [url, events, name]\n");
  const breaking = run(copy, "contract-check-breaking.ts");
  t.equal(breaking.status, 1, breaking.output);
  t.match(
    breaking.output,
    "components.schemas.WebhookSubscriptionCreateRequest: property name is now required in requests (used by createWebhookSubscription)",
  );
});
