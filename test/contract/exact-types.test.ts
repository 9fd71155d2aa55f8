// The generated types are as exact as the document: event kinds, statuses and error codes are literal
// unions, and a delivery's payload is narrowed by its `event`. Fixtures are compiled with tsc (the compiler
// API): the right code compiles, and a misspelt kind, status or code does not.
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import ts from "typescript";
import { tempDir } from "../helpers/temp-dir.ts";

const GENERATED = path.resolve(import.meta.dirname, "../../generated/openapi.ts");
const HEADER = `import type { components } from ${JSON.stringify(GENERATED)};
type Schemas = components["schemas"];
`;

/** Each fixture, and the diagnostics it must produce (none for the first): [code, text the message holds]. */
const FIXTURES: Record<string, { source: string; expected: [number, string][] }> = {
  "narrowed.ts": {
    source: `
export function idOf(payload: Schemas["WebhookEventPayload"]): string {
  switch (payload.event) {
    case "intake.submitted":
    case "intake.batch_submitted":
      return payload.data.submission_id;
    case "document.status_changed":
    case "document.uploaded":
    case "document.completed":
      return payload.data.document_id;
    case "adjudication.case_created":
    case "adjudication.case_resolved":
      return payload.data.case_id;
    case "scorecard.created":
      return payload.data.scorecard_id;
    case "webhook.endpoint_disabled":
    case "webhook.test":
      return payload.data.subscription_id;
    case "webhook.delivery_exhausted":
      return payload.data.delivery_id;
  }
}
export function label(delivery: Schemas["WebhookDeliveryResponse"]): string {
  const kind: Schemas["WebhookDeliveredEventKind"] = delivery.event_type;
  const status: "pending" | "delivered" | "failed" = delivery.status;
  return kind + status;
}
export const code: Schemas["ReviewApiErrorEnvelope"]["error"]["code"] = "WEBHOOK_SUBSCRIPTION_DISABLED";
`,
    expected: [],
  },
  "misspelt-kind.ts": {
    source: `export const kind: Schemas["WebhookEventKind"] = "intake.submited";\n`,
    expected: [[2820, `"intake.submited"`]],
  },
  "misspelt-kind-compared.ts": {
    source: `export const isSubmission = (payload: Schemas["WebhookEventPayload"]) => payload.event === "intake.submited";\n`,
    expected: [[2367, `"intake.submited"`]],
  },
  "misspelt-delivered-kind.ts": {
    source: `export const kind: Schemas["WebhookDeliveryResponse"]["event_type"] = "webhook.tset";\n`,
    expected: [[2820, `"webhook.tset"`]],
  },
  "misspelt-status.ts": {
    source: `export const status: Schemas["WebhookDeliveryResponse"]["status"] = "deliverd";\n`,
    expected: [[2820, `"deliverd"`]],
  },
  "misspelt-error-code.ts": {
    source: `export const code: Schemas["ReviewApiErrorEnvelope"]["error"]["code"] = "NOT_FUOND";\n`,
    expected: [[2820, `"NOT_FUOND"`]],
  },
  "not-narrowed.ts": {
    source: `export const idOf = (payload: Schemas["WebhookEventPayload"]): string => payload.data.submission_id;\n`,
    expected: [[2322, "unknown"]],
  },
};

t.test("fixtures compiled against generated/openapi.ts", async (t) => {
  const directory = tempDir(t, "exact-types-");
  const files = Object.entries(FIXTURES).map(([name, fixture]) => {
    const file = path.join(directory, name);
    fs.writeFileSync(file, `${HEADER}${fixture.source}`);
    return file;
  });
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
    types: [],
  });
  for (const [name, fixture] of Object.entries(FIXTURES)) {
    const source = program.getSourceFile(path.join(directory, name));
    if (!source) return t.fail(`${name} was not compiled`);
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map(
      (diagnostic) => ({ code: diagnostic.code, text: ts.flattenDiagnosticMessageText(diagnostic.messageText, " ") }),
    );
    t.equal(diagnostics.length, fixture.expected.length, `${name}: ${JSON.stringify(diagnostics)}`);
    for (const [index, [code, text]] of fixture.expected.entries()) {
      t.equal(diagnostics[index]?.code, code, `${name}: error TS${code}`);
      t.match(diagnostics[index]?.text ?? "", text, `${name}: names ${text}`);
    }
  }
});
