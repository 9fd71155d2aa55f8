// Nothing declared goes unused: every parameter and body field the document declares is read by its
// operation's handler (scripts/contract-check-reads.ts, step 5 of npm run check:contract). Planted unused
// inputs in a copy of the repository fail the check, naming operation and input; reading one passes it.
import { spawnSync } from "node:child_process";
import path from "node:path";
import t from "tap";
import { readsStep } from "../../scripts/contract-check-reads.ts";
import { copyRepository, editFile } from "../helpers/repository-copy.ts";

// Each case runs the project's own tools on a copy of the repository: minutes on a busy machine.
t.setTimeout(600_000);

const CREATED_BEFORE = `        - name: created_before
          in: query
          required: false
          description: Only deliveries created before this instant (an RFC 3339 date-time that names an instant; see Formats).
          allowReserved: true
          schema:
            type: string
            format: date-time
          examples:
            example:
              value: '2026-12-01T00:00:00Z'
              x-disabled: true
`;

function run(cwd: string, script: string) {
  const result = spawnSync(process.execPath, [path.join(cwd, "scripts", script)], {
    cwd,
    encoding: "utf8",
    timeout: 500_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

t.test("every input the document declares is read by its handler", async (t) => {
  const result = readsStep();
  t.ok(result.ok, result.lines.join("\n"));
});

t.test("a planted unused query parameter, body field and header fail the check, named", async (t) => {
  const copy = copyRepository(t, "integrator-reads-");
  editFile(
    copy,
    "openapi/openapi.yaml",
    CREATED_BEFORE,
    `${CREATED_BEFORE}        - name: include_archived
          in: query
          required: false
          description: Also deliveries of deleted subscriptions.
          schema:
            type: boolean
`,
  );
  editFile(
    copy,
    "openapi/openapi.yaml",
    "        external_reference:\n          type: [string, 'null']\n          maxLength: 255\n          description: The caller's own reference for the submission.\n        item_metadata:",
    "        external_reference:\n          type: [string, 'null']\n          maxLength: 255\n          description: The caller's own reference for the submission.\n        priority:\n          type: integer\n          description: Higher goes first.\n        item_metadata:",
  );
  editFile(
    copy,
    "openapi/openapi.yaml",
    "      operationId: getHealth\n",
    "      operationId: getHealth\n      parameters:\n        - name: X-Probe-Source\n          in: header\n          required: false\n          description: Which probe asks.\n          schema:\n            type: string\n",
  );
  const generated = run(copy, "generate.ts");
  t.equal(generated.status, 0, generated.output);

  const planted = run(copy, "contract-check-reads.ts");
  t.equal(planted.status, 1, planted.output);
  t.match(
    planted.output,
    "listWebhookDeliveries: query parameter include_archived is declared but its handler never reads it",
  );
  t.match(planted.output, "submitIntake: body field priority is declared but its handler never reads it");
  t.match(planted.output, "getHealth: header X-Probe-Source is declared but its handler never reads it");
  t.equal(planted.output.match(/is declared but/g)?.length, 3, "nothing else is reported");

  // The handlers read them: the check passes.
  editFile(
    copy,
    "handlers/webhooks/deliveries.ts",
    "  const limit = query.limit === undefined ? DEFAULT_DELIVERIES_LIMIT : Number(query.limit);",
    '  const limit = query.limit === undefined ? DEFAULT_DELIVERIES_LIMIT : Number(query.limit);\n  if (query.include_archived === true) throw new Error("not yet");',
  );
  editFile(
    copy,
    "handlers/intake/index.ts",
    "  const { body } = call;\n",
    '  const { body } = call;\n  if ("priority" in body && body.priority !== undefined) throw new Error("not yet");\n',
  );
  editFile(
    copy,
    "handlers/probes/index.ts",
    'export const getHealth: OperationHandler<"getHealth"> = async ({ services }) => ({',
    'export const getHealth: OperationHandler<"getHealth"> = async ({ services, headers }) => ({\n  ...(headers["x-probe-source"] === "lb" ? {} : {}),',
  );
  // In this process, which has parsed the installed packages' types already (the first test).
  const read = readsStep(copy);
  t.ok(read.ok, read.lines.join("\n"));
  t.match(read.lines.join("\n"), /\d+ inputs of \d+ operations, each read by its handler/);
});
