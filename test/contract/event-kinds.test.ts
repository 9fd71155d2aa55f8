// An event kind is written once, in the document: `npm run generate` writes generated/event-kinds.ts (the
// kinds, their data types and descriptions, which db/ and the portal import) and the portal's bundle from
// it, `generate --check` fails while either lags the document, and generation stops, naming the kind, when
// the document's own places of a kind disagree. Run on copies of the repository with a kind added the way
// CONTRIBUTING.md ("Add an event kind") says.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { lintStep } from "../../scripts/contract-steps.ts";
import { copyRepository, editFile } from "../helpers/repository-copy.ts";

// Each case runs the generator on a copy of the repository: up to a minute on a busy machine.
t.setTimeout(300_000);

const KIND = "document.archived";
const DESCRIPTION = "A document was archived.";

/** The edits of openapi/openapi.yaml that add document.archived: [text that occurs once, what replaces it]. */
const ADD_KIND: Record<string, [string, string][]> = {
  "the kind enum": [
    [
      "        - scorecard.created\n        - webhook.endpoint_disabled\n        - webhook.delivery_exhausted\n    WebhookTestEventRequest:",
      `        - scorecard.created\n        - ${KIND}\n        - webhook.endpoint_disabled\n        - webhook.delivery_exhausted\n    WebhookTestEventRequest:`,
    ],
  ],
  "the selector enum": [
    [
      "        - scorecard.created\n        - webhook.endpoint_disabled\n        - webhook.delivery_exhausted\n        - '*'",
      `        - scorecard.created\n        - ${KIND}\n        - webhook.endpoint_disabled\n        - webhook.delivery_exhausted\n        - '*'`,
    ],
  ],
  "the webhooks entry": [
    [
      "  webhook.test:\n    post:\n",
      `  ${KIND}:
    post:
      operationId: webhookDocumentArchived
      summary: ${KIND}
      description: ${DESCRIPTION} See \`WebhookEventEnvelope\` for signing and retries.
      tags: [webhooks]
      security: []
      parameters:
        - $ref: '#/components/parameters/WebhookSignature'
        - $ref: '#/components/parameters/WebhookEvent'
        - $ref: '#/components/parameters/WebhookDelivery'
        - $ref: '#/components/parameters/WebhookUserAgent'
        - $ref: '#/components/parameters/WebhookStandardId'
        - $ref: '#/components/parameters/WebhookStandardTimestamp'
        - $ref: '#/components/parameters/WebhookStandardSignature'
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/DocumentArchivedEvent'
            examples:
              event:
                $ref: '#/components/examples/DocumentArchivedPayload'
      responses:
        2XX:
          $ref: '#/components/responses/WebhookDelivered'
        4XX:
          $ref: '#/components/responses/WebhookFailed'
        default:
          $ref: '#/components/responses/WebhookFailed'
  webhook.test:
    post:
`,
    ],
    [
      "    HealthHealthy:\n",
      `    DocumentArchivedPayload:
      summary: The claim document was archived
      value:
        id: evt_0192f96b-5f6a-7b7c-8d8e-9f0a1b2c3d56
        event: ${KIND}
        tenant_id: 0192f0b1-2c3d-7e4f-8a5b-6c7d8e9f0a1b
        timestamp: '2026-11-24T09:00:00.000Z'
        data:
          document_id: 0192f0d2-4a6b-7c8d-9e0f-a1b2c3d4e5f6
          status: archived
    HealthHealthy:
`,
    ],
    [
      "\n    # ---------------------------------------------------------------- health\n",
      `    DocumentArchivedEvent:
      description: The \`${KIND}\` delivery body.
      allOf:
        - $ref: '#/components/schemas/WebhookEventEnvelope'
        - type: object
          required: [event, data]
          properties:
            event:
              const: ${KIND}
            data:
              $ref: '#/components/schemas/DocumentEventData'

    # ---------------------------------------------------------------- health
`,
    ],
  ],
  "the payload union": [
    [
      "        - $ref: '#/components/schemas/WebhookTestEvent'\n    IntakeEventData:",
      "        - $ref: '#/components/schemas/DocumentArchivedEvent'\n        - $ref: '#/components/schemas/WebhookTestEvent'\n    IntakeEventData:",
    ],
  ],
};

function addKind(copy: string, places: string[]): void {
  for (const place of places)
    for (const [search, replacement] of ADD_KIND[place] ?? [])
      editFile(copy, "openapi/openapi.yaml", search, replacement);
}

function generate(cwd: string, args: string[] = []) {
  const result = spawnSync(process.execPath, [path.join(cwd, "scripts", "generate.ts"), ...args], {
    cwd,
    encoding: "utf8",
    timeout: 240_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

t.test("a kind added to the document reaches db/ and the portal through npm run generate", async (t) => {
  const copy = copyRepository(t);
  addKind(copy, Object.keys(ADD_KIND));
  t.same(await lintStep(copy), { ok: true, lines: ["no problems (recommended-strict)"] }, "the document stays valid");

  const stale = generate(copy, ["--check"]);
  t.equal(stale.status, 1, stale.output);
  t.match(stale.output, "generated/event-kinds.ts", "the generated kinds lag the document");
  t.match(stale.output, "generated/portal/portal.js", "and so does the portal's bundle");

  const written = generate(copy);
  t.equal(written.status, 0, written.output);
  const kinds = fs.readFileSync(path.join(copy, "generated/event-kinds.ts"), "utf8");
  t.match(
    kinds,
    `  "scorecard.created",\n  "${KIND}",\n  "webhook.endpoint_disabled",`,
    "the kind, in the document's order",
  );
  t.match(kinds, `  "${KIND}": Schemas["DocumentEventData"];`, "its data type");
  t.match(kinds, `  "${KIND}": "${DESCRIPTION}",`, "its description's first sentence");
  const portal = fs.readFileSync(path.join(copy, "generated/portal/portal.js"), "utf8");
  t.match(portal, `"${KIND}"`, "the portal offers the kind");
  t.match(portal, DESCRIPTION, "and describes it");

  const fresh = generate(copy, ["--check"]);
  t.equal(fresh.status, 0, `one run of generate brings every generated file up to date: ${fresh.output}`);
});

t.test("a kind in only some of the document's places stops generation, naming what is missing", async (t) => {
  const copy = copyRepository(t);
  addKind(copy, ["the kind enum"]);
  const enumOnly = generate(copy);
  t.equal(enumOnly.status, 1, enumOnly.output);
  t.match(enumOnly.output, "the places of an event kind disagree");
  t.match(enumOnly.output, `${KIND}: WebhookEventSelector's enum does not list it`);
  t.match(enumOnly.output, `${KIND}: the webhooks section has no entry for it`);

  addKind(copy, ["the selector enum", "the webhooks entry"]);
  const unlisted = generate(copy);
  t.equal(unlisted.status, 1, unlisted.output);
  t.match(
    unlisted.output,
    `${KIND}: WebhookEventPayload's oneOf does not list #/components/schemas/DocumentArchivedEvent`,
  );
  t.notMatch(unlisted.output, "WebhookEventSelector", "the places already added are not reported");
});
