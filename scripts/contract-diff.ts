// What changed between two versions of the document, as an integrator reads a changelog: the operations,
// event kinds, parameters, request bodies, response statuses and headers, component schemas, fields,
// enum values and security schemes one has and the other has not. A rename is what it is on the wire: the
// old name removed and the new one added. Whether a change breaks an integrator is the breaking-change
// check's verdict (scripts/contract-check-breaking.ts); this lists, it does not judge. Descriptions and
// examples are not listed: they change a version only as far as `contractChanged` tells.
import { isDeepStrictEqual } from "node:util";
import { isRecord, operationsOf, resolvePointer, type DocumentNode } from "./openapi-source.ts";

/** One kind of change, in the order a changelog lists them. */
export const DIFF_KINDS = [
  "operations",
  "event kinds",
  "operationIds",
  "parameters",
  "request bodies",
  "response statuses",
  "response headers",
  "schemas",
  "fields",
  "enum values",
  "security schemes",
] as const;
export type DiffKind = (typeof DIFF_KINDS)[number];

export interface ContractChange {
  change: "added" | "removed";
  kind: DiffKind;
  /** Where the item is (an operation, a schema), in Markdown; "" for a top-level item. */
  subject: string;
  /** What was added or removed, in Markdown. */
  item: string;
}

const asRecord = (value: unknown): DocumentNode => (isRecord(value) ? value : {});
const code = (text: string) => `\`${text}\``;

function resolve(document: DocumentNode, value: unknown): DocumentNode {
  let node = value;
  for (let depth = 0; depth < 10 && isRecord(node) && typeof node.$ref === "string"; depth++)
    node = resolvePointer(document, node.$ref);
  return asRecord(node);
}

/** What one document holds, each thing under a key that stays when the document around it changes. */
interface Inventory {
  operations: Map<string, string>;
  eventKinds: Set<string>;
  operationIds: Map<string, string>;
  /** operation name → "query `cursor`" */
  parameters: Map<string, Set<string>>;
  requestBodies: Set<string>;
  responses: Map<string, Set<string>>;
  /** header name → the responses that declare it */
  responseHeaders: Map<string, number>;
  schemas: Set<string>;
  /** schema → its fields, nested ones as `a.b` and list items as `a[].b` */
  fields: Map<string, Set<string>>;
  /** "schema" or "schema.field" or "operation query `x`" → its enum values */
  enums: Map<string, Set<string>>;
  security: Set<string>;
}

const add = <K>(map: Map<K, Set<string>>, key: K, value: string) =>
  map.set(key, (map.get(key) ?? new Set()).add(value));

/**
 * The fields and enums of a schema, not following $refs (each component schema is walked on its own):
 * properties, list items and the members of allOf, anyOf and oneOf, which add to the same object.
 */
function walkSchema(schema: unknown, owner: string, at: string, inventory: Inventory): void {
  if (!isRecord(schema) || typeof schema.$ref === "string") return;
  if (Array.isArray(schema.enum))
    for (const value of schema.enum) add(inventory.enums, owner + at, JSON.stringify(value));
  for (const [name, property] of Object.entries(asRecord(schema.properties))) {
    const field = at === "" ? name : `${at.slice(1)}.${name}`;
    add(inventory.fields, owner, field);
    walkSchema(property, owner, `.${field}`, inventory);
  }
  if (isRecord(schema.items)) walkSchema(schema.items, owner, `${at}[]`, inventory);
  for (const combination of ["allOf", "anyOf", "oneOf"])
    for (const member of Array.isArray(schema[combination]) ? schema[combination] : [])
      walkSchema(member, owner, at, inventory);
}

function inventoryOf(document: DocumentNode): Inventory {
  const inventory: Inventory = {
    operations: new Map(),
    eventKinds: new Set(),
    operationIds: new Map(),
    parameters: new Map(),
    requestBodies: new Set(),
    responses: new Map(),
    responseHeaders: new Map(),
    schemas: new Set(),
    fields: new Map(),
    enums: new Map(),
    security: new Set(),
  };
  for (const entry of operationsOf(document)) {
    // Webhooks are named by their event kind (and method, should one ever have two).
    const name = entry.webhook
      ? `${code(entry.path)}${entry.method === "post" ? "" : ` (${entry.method.toUpperCase()})`}`
      : code(`${entry.method.toUpperCase()} ${entry.path}`);
    if (entry.webhook) inventory.eventKinds.add(name);
    else inventory.operations.set(name, entry.operationId ? ` (${code(entry.operationId)})` : "");
    if (entry.operationId) inventory.operationIds.set(name, entry.operationId);
    const operation = entry.operation;
    for (const raw of Array.isArray(operation.parameters) ? operation.parameters : []) {
      const parameter = resolve(document, raw);
      const label = `${String(parameter.in)} ${code(String(parameter.name))}`;
      add(inventory.parameters, name, label);
      walkSchema(resolve(document, parameter.schema), `${name} ${label}`, "", inventory);
    }
    if (operation.requestBody !== undefined) {
      inventory.requestBodies.add(name);
      for (const media of Object.values(asRecord(resolve(document, operation.requestBody).content)))
        walkSchema(asRecord(media).schema, `${name} request body`, "", inventory);
    }
    for (const [status, raw] of Object.entries(asRecord(operation.responses))) {
      add(inventory.responses, name, code(status));
      const response = resolve(document, raw);
      for (const header of Object.keys(asRecord(response.headers)))
        inventory.responseHeaders.set(header, (inventory.responseHeaders.get(header) ?? 0) + 1);
      for (const media of Object.values(asRecord(response.content)))
        walkSchema(asRecord(media).schema, `${name} ${status} response`, "", inventory);
    }
  }
  const components = asRecord(document.components);
  for (const [name, schema] of Object.entries(asRecord(components.schemas))) {
    inventory.schemas.add(name);
    walkSchema(schema, name, "", inventory);
  }
  for (const [name, scheme] of Object.entries(asRecord(components.securitySchemes))) {
    inventory.security.add(code(name));
    for (const flow of Object.keys(asRecord(asRecord(scheme).flows)))
      inventory.security.add(`${code(name)} flow ${code(flow)}`);
  }
  return inventory;
}

/** The items of `after` that `before` lacks ("added"), and the other way round ("removed"). */
function compareSets(
  before: Iterable<string>,
  after: Iterable<string>,
  push: (change: ContractChange["change"], item: string) => void,
): void {
  const was = new Set(before);
  const is = new Set(after);
  for (const item of is) if (!was.has(item)) push("added", item);
  for (const item of was) if (!is.has(item)) push("removed", item);
}

/**
 * Every change between the two documents. What lies inside something added or removed is not listed again:
 * a new operation's parameters, a new schema's fields. Operations and event kinds keep the document's
 * order; the rest are sorted.
 */
export function contractDiff(base: DocumentNode, current: DocumentNode): ContractChange[] {
  const was = inventoryOf(base);
  const is = inventoryOf(current);
  const changes: ContractChange[] = [];
  const pusher =
    (kind: DiffKind, subject = "") =>
    (change: ContractChange["change"], item: string) =>
      changes.push({ change, kind, subject, item });

  compareSets(
    [...was.operations].map(([name, id]) => name + id),
    [...is.operations].map(([name, id]) => name + id),
    pusher("operations"),
  );
  compareSets(was.eventKinds, is.eventKinds, pusher("event kinds"));
  // Kept: in both documents, under the same method and path (or event kind).
  const kept = [...is.operations.keys(), ...is.eventKinds].filter(
    (name) => was.operations.has(name) || was.eventKinds.has(name),
  );
  const keptSchemas = [...is.schemas].filter((name) => was.schemas.has(name));
  for (const name of kept) {
    const [before, after] = [was.operationIds.get(name), is.operationIds.get(name)];
    if (before !== after) {
      if (before) pusher("operationIds", name)("removed", code(before));
      if (after) pusher("operationIds", name)("added", code(after));
    }
    compareSets(was.parameters.get(name) ?? [], is.parameters.get(name) ?? [], pusher("parameters", name));
    if (was.requestBodies.has(name) !== is.requestBodies.has(name))
      pusher("request bodies")(is.requestBodies.has(name) ? "added" : "removed", name);
    compareSets(was.responses.get(name) ?? [], is.responses.get(name) ?? [], pusher("response statuses", name));
  }
  compareSets(was.responseHeaders.keys(), is.responseHeaders.keys(), (change, header) =>
    pusher("response headers")(
      change,
      `${code(header)} (${(change === "added" ? is : was).responseHeaders.get(header) ?? 0} responses)`,
    ),
  );
  compareSets([...was.schemas].map(code), [...is.schemas].map(code), pusher("schemas"));
  for (const name of keptSchemas)
    compareSets(
      [...(was.fields.get(name) ?? [])].map(code),
      [...(is.fields.get(name) ?? [])].map(code),
      pusher("fields", code(name)),
    );
  // Enums: of schemas and fields in both documents, and of the parameters of kept operations.
  const enumOwners = new Set([...was.enums.keys()].filter((owner) => is.enums.has(owner)));
  for (const owner of enumOwners) {
    const subject = owner.includes("`") ? owner : code(owner);
    compareSets(
      [...(was.enums.get(owner) ?? [])].map(code),
      [...(is.enums.get(owner) ?? [])].map(code),
      pusher("enum values", subject),
    );
  }
  compareSets(was.security, is.security, pusher("security schemes"));

  const order = (change: ContractChange) => DIFF_KINDS.indexOf(change.kind);
  const sortable = (change: ContractChange) => change.kind !== "operations" && change.kind !== "event kinds";
  const bare = (text: string) => text.replaceAll("`", "");
  const compare = (a: string, b: string) => (bare(a) < bare(b) ? -1 : bare(a) > bare(b) ? 1 : 0);
  return changes
    .map((change, index) => ({ change, index }))
    .sort(
      (a, b) =>
        order(a.change) - order(b.change) ||
        (sortable(a.change)
          ? compare(a.change.subject, b.change.subject) || compare(a.change.item, b.change.item)
          : a.index - b.index),
    )
    .map(({ change }) => change);
}

/** Whether anything but info.version differs: descriptions and examples count here. */
export function contractChanged(base: DocumentNode, current: DocumentNode): boolean {
  const withoutVersion = (document: DocumentNode) => ({
    ...document,
    info: { ...asRecord(document.info), version: undefined },
  });
  return !isDeepStrictEqual(withoutVersion(base), withoutVersion(current));
}
