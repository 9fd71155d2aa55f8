// The subscribable event kinds as the document declares them, and the text of generated/event-kinds.ts that
// `npm run generate` writes from them: db/, the portal and the tests take the kinds, their data types and
// their descriptions from there, so the document is the one place a kind is written by hand
// (CONTRIBUTING.md, "Add an event kind"). Within the document a kind appears in several places, which must
// agree; generation stops and names the kind when they do not:
//   - the enums of WebhookEventKind (the kinds, in order) and WebhookEventSelector (the kinds and `*`);
//   - an entry of the top-level `webhooks` section, with a description and an example, whose request body
//     is the kind's event schema: an allOf whose `event` is the kind (`const`) and whose `data` is a `$ref`
//     to the kind's data schema;
//   - WebhookEventPayload's oneOf, which lists that same event schema. It has no discriminator: the
//     `const` of each `event` tells the kinds apart, and openapi-zod-client cannot compile a discriminator
//     over allOf schemas (scripts/codegen/check.ts).
// The `webhooks` section may also hold entries sent but never subscribed to (webhook.test): the consts of
// WebhookDeliveredEventKind.
import { isRecord, resolvePointer, SOURCE, type DocumentNode } from "./openapi-source.ts";

export interface DocumentedEventKind {
  kind: string;
  /** The component schema of the kind's `data`, e.g. IntakeEventData. */
  dataSchema: string;
  /** The first sentence of the kind's description in the `webhooks` section, without Markdown's code marks. */
  description: string;
}

const SCHEMAS = "#/components/schemas/";

/** `node`, or what it refers to when it is a `$ref`. */
function resolved(document: DocumentNode, node: unknown): unknown {
  return isRecord(node) && typeof node.$ref === "string" ? resolvePointer(document, node.$ref) : node;
}

function stringsAt(document: DocumentNode, pointer: string): string[] | undefined {
  const value = resolvePointer(document, pointer);
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? value : undefined;
}

/** The first sentence of a description (whitespace collapsed, code marks removed): the portal's catalogue line. */
export function firstSentence(description: string): string {
  const text = description.replace(/\s+/g, " ").replace(/`/g, "").trim();
  return /^.*?[.!?](?=\s|$)/.exec(text)?.[0] ?? text;
}

/** The subscribable kinds in the order of WebhookEventKind; throws, naming every disagreement, when the document's places differ. */
export function documentedEventKinds(document: DocumentNode): DocumentedEventKind[] {
  const problems: string[] = [];
  const kinds = stringsAt(document, `${SCHEMAS}WebhookEventKind/enum`);
  if (!kinds || kinds.length === 0)
    throw new Error(`${SOURCE}: components.schemas.WebhookEventKind has no enum of kinds`);

  const selectors = stringsAt(document, `${SCHEMAS}WebhookEventSelector/enum`) ?? [];
  for (const kind of kinds)
    if (!selectors.includes(kind)) problems.push(`${kind}: WebhookEventSelector's enum does not list it`);
  for (const selector of selectors)
    if (selector !== "*" && !kinds.includes(selector))
      problems.push(`${selector}: WebhookEventSelector's enum lists it, WebhookEventKind's does not`);

  const delivered = resolvePointer(document, `${SCHEMAS}WebhookDeliveredEventKind/anyOf`);
  const deliveredOnly = (Array.isArray(delivered) ? delivered : [])
    .map((member) => (isRecord(member) ? member.const : undefined))
    .filter((value): value is string => typeof value === "string");
  const webhooks = resolvePointer(document, "#/webhooks");
  for (const name of Object.keys(isRecord(webhooks) ? webhooks : {}))
    if (!kinds.includes(name) && !deliveredOnly.includes(name))
      problems.push(`${name}: the webhooks section has it, WebhookEventKind's enum does not list it`);

  const union = resolvePointer(document, `${SCHEMAS}WebhookEventPayload/oneOf`);
  const listed = (Array.isArray(union) ? union : []).map((member) => (isRecord(member) ? member.$ref : undefined));
  const found: DocumentedEventKind[] = [];
  for (const kind of kinds) {
    const post = resolvePointer(document, `#/webhooks/${kind}/post`);
    if (!isRecord(post)) {
      problems.push(`${kind}: the webhooks section has no entry for it (with a post operation)`);
      continue;
    }
    if (typeof post.description !== "string" || post.description.trim() === "")
      problems.push(`${kind}: its webhooks entry has no description`);
    const body = resolved(document, post.requestBody);
    const content = isRecord(body) && isRecord(body.content) ? body.content["application/json"] : undefined;
    const schema = isRecord(content) ? content.schema : undefined;
    const eventRef = isRecord(schema) && typeof schema.$ref === "string" ? schema.$ref : undefined;
    if (!eventRef?.startsWith(SCHEMAS)) {
      problems.push(`${kind}: its webhooks entry's request body is not a $ref to a component schema`);
      continue;
    }
    if (!isRecord(content) || !isRecord(content.examples) || Object.keys(content.examples).length === 0)
      problems.push(`${kind}: its webhooks entry has no example (sendWebhookTestEvent sends the first)`);
    if (!listed.includes(eventRef)) problems.push(`${kind}: WebhookEventPayload's oneOf does not list ${eventRef}`);

    const eventSchema = resolvePointer(document, eventRef);
    const members = isRecord(eventSchema) && Array.isArray(eventSchema.allOf) ? eventSchema.allOf : [];
    const properties = members
      .map((member) => resolved(document, member))
      .map((member) => (isRecord(member) && isRecord(member.properties) ? member.properties : {}));
    const event = properties.map((own) => own.event).find((value) => isRecord(value) && "const" in value);
    if (!isRecord(event) || event.const !== kind)
      problems.push(`${kind}: ${eventRef.slice(SCHEMAS.length)} does not set event to const ${kind}`);
    const data = properties.map((own) => own.data).find((value) => isRecord(value) && typeof value.$ref === "string");
    const dataRef = isRecord(data) && typeof data.$ref === "string" ? data.$ref : "";
    if (!dataRef.startsWith(SCHEMAS) || !isRecord(resolvePointer(document, dataRef))) {
      problems.push(`${kind}: ${eventRef.slice(SCHEMAS.length)} does not set data to a $ref to a component schema`);
      continue;
    }
    found.push({
      kind,
      dataSchema: dataRef.slice(SCHEMAS.length),
      description: firstSentence(typeof post.description === "string" ? post.description : ""),
    });
  }
  if (problems.length > 0)
    throw new Error(
      `${SOURCE}: the places of an event kind disagree:\n${problems.map((line) => `  ${line}`).join("\n")}`,
    );
  return found;
}

/** generated/event-kinds.ts without its header: the kinds, the type of each kind's data, and what each means. */
export function renderEventKinds(document: DocumentNode): string {
  const kinds = documentedEventKinds(document);
  const quote = (text: string) => JSON.stringify(text);
  return [
    "// The subscribable event kinds of the document: WebhookEventKind's enum and, for each kind, its entry in",
    '// the top-level `webhooks` section (CONTRIBUTING.md, "Add an event kind"; scripts/event-kinds.ts).',
    'import type { components } from "./openapi.ts";',
    "",
    'type Schemas = components["schemas"];',
    "",
    "/** A lifecycle event kind that can be subscribed to. */",
    'export type EventKind = Schemas["WebhookEventKind"];',
    "",
    "/** Every subscribable kind, in the document's order. */",
    "export const EVENT_KINDS: readonly EventKind[] = [",
    ...kinds.map(({ kind }) => `  ${quote(kind)},`),
    "];",
    "",
    "/** The `data` each kind carries: the schema its event schema gives `data`. */",
    "export interface EventDataByKind {",
    ...kinds.map(({ kind, dataSchema }) => `  ${quote(kind)}: Schemas[${quote(dataSchema)}];`),
    "}",
    "",
    "/** What each kind means: the first sentence of its description in the `webhooks` section. */",
    "export const EVENT_DESCRIPTIONS: Readonly<Record<EventKind, string>> = {",
    ...kinds.map(({ kind, description }) => `  ${quote(kind)}: ${quote(description)},`),
    "};",
    "",
  ].join("\n");
}
