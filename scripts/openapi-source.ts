// The hand-written contract, openapi/openapi.yaml, read the one way every tool reads it: parsed strictly,
// every $ref local and resolving, bundled in memory as the document generated/openapi.json holds. Also the
// names a reader needs in a report: which operation a pointer or a component schema concerns.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { decodePointerSegment } from "../http/openapi-document.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const SOURCE = "openapi/openapi.yaml";

export type DocumentNode = Record<string, unknown>;

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"] as const;

export function isRecord(value: unknown): value is DocumentNode {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const asRecord = (value: unknown): DocumentNode => (isRecord(value) ? value : {});

/** Parses the YAML strictly: any YAML error or warning (duplicate keys included) is an error. */
export function readDocument(text: string, source = SOURCE): DocumentNode {
  const parsed = YAML.parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const problems = [...parsed.errors, ...parsed.warnings];
  if (problems.length > 0)
    throw new Error(`${source} is not valid YAML:\n${problems.map((problem) => problem.message).join("\n")}`);
  const document: unknown = parsed.toJS({ maxAliasCount: -1 });
  if (!isRecord(document) || document.openapi !== "3.1.0")
    throw new Error(`${source} must be an OpenAPI 3.1.0 document`);
  return document;
}

/** The node a local "#/..." pointer names, or undefined. */
export function resolvePointer(document: DocumentNode, pointer: string): unknown {
  let node: unknown = document;
  for (const raw of pointer.replace(/^#\/?/, "").split("/")) {
    if (raw === "") continue;
    const key = decodePointerSegment(decodeURIComponent(raw));
    if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)];
    else if (isRecord(node) && key in node) node = node[key];
    else return undefined;
  }
  return node;
}

/** The document must stand alone: every $ref is a local "#/..." pointer that resolves. */
export function checkReferences(document: DocumentNode, source = SOURCE): void {
  const unresolved: string[] = [];
  const visit = (node: unknown, at: string): void => {
    if (Array.isArray(node)) {
      node.forEach((item, index) => visit(item, `${at}/${index}`));
      return;
    }
    if (!isRecord(node)) return;
    const ref = node.$ref;
    if (typeof ref === "string" && !(ref.startsWith("#/") && resolvePointer(document, ref) !== undefined))
      unresolved.push(`${at}: ${ref}`);
    for (const [key, value] of Object.entries(node)) visit(value, `${at}/${key}`);
  };
  visit(document, "#");
  if (unresolved.length > 0)
    throw new Error(`${source} has $refs that are not local or do not resolve:\n${unresolved.join("\n")}`);
}

/** openapi/openapi.yaml (of `root`), checked and bundled in memory: what generated/openapi.json holds. */
export function bundleDocument(root = ROOT): DocumentNode {
  const document = readDocument(fs.readFileSync(path.join(root, SOURCE), "utf8"));
  checkReferences(document);
  return document;
}

export interface OperationEntry {
  /** "GET /v1/health", or "webhook POST intake.submitted" for the webhooks section. */
  key: string;
  operationId: string | undefined;
  method: string;
  /** The path template, or the webhook's name. */
  path: string;
  webhook: boolean;
  operation: DocumentNode;
}

/** Every operation of the document's paths and webhooks. */
export function operationsOf(document: DocumentNode): OperationEntry[] {
  const found: OperationEntry[] = [];
  for (const [section, webhook] of [
    ["paths", false],
    ["webhooks", true],
  ] as const)
    for (const [key, item] of Object.entries(asRecord(document[section])))
      for (const method of METHODS) {
        const operation = asRecord(item)[method];
        if (!isRecord(operation)) continue;
        found.push({
          key: `${webhook ? "webhook " : ""}${method.toUpperCase()} ${key}`,
          operationId: typeof operation.operationId === "string" ? operation.operationId : undefined,
          method,
          path: key,
          webhook,
          operation,
        });
      }
  return found;
}

/** The component schemas each operation reaches through $refs (parameters, body, responses), by operation key. */
const reachedSchemas = new WeakMap<DocumentNode, Map<string, Set<string>>>();

function schemasByOperation(document: DocumentNode): Map<string, Set<string>> {
  const known = reachedSchemas.get(document);
  if (known) return known;
  const byOperation = new Map<string, Set<string>>();
  for (const entry of operationsOf(document)) {
    const seen = new Set<string>();
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(visit);
      if (!isRecord(node)) return;
      if (typeof node.$ref === "string") {
        const ref = node.$ref;
        if (ref.startsWith("#/components/schemas/")) {
          const name = decodePointerSegment(ref.slice("#/components/schemas/".length));
          if (seen.has(name)) return;
          seen.add(name);
        }
        visit(resolvePointer(document, ref));
      }
      Object.values(node).forEach(visit);
    };
    visit(entry.operation);
    byOperation.set(entry.key, seen);
  }
  reachedSchemas.set(document, byOperation);
  return byOperation;
}

/** A reader's name for an operation: its operationId, else its key. */
export const operationName = (entry: Pick<OperationEntry, "operationId" | "key">): string =>
  entry.operationId ?? entry.key;

/** The names of the operations whose parameters, body or responses reach the component schema `name`. */
export function operationsUsingSchema(document: DocumentNode, name: string): string[] {
  const byOperation = schemasByOperation(document);
  return operationsOf(document)
    .filter((entry) => byOperation.get(entry.key)?.has(name))
    .map(operationName);
}

/**
 * What a JSON pointer into the document concerns, in words: "operation submitIntake (POST /v1/intake/submit),
 * at requestBody/..." or "schema IntakeSubmitRequest, at properties/module (used by submitIntake)".
 */
export function describePointer(document: DocumentNode, pointer: string): string {
  const segments = pointer
    .replace(/^#\/?/, "")
    .split("/")
    .map((raw) => decodePointerSegment(decodeURIComponent(raw)));
  const [section, first, second, ...rest] = segments;
  if ((section === "paths" || section === "webhooks") && first !== undefined) {
    const entry = operationsOf(document).find(
      (candidate) =>
        candidate.path === first && candidate.method === second && candidate.webhook === (section === "webhooks"),
    );
    if (entry) {
      const at = rest.length > 0 ? `, at ${rest.join("/")}` : "";
      return `operation ${operationName(entry)} (${entry.key})${at}`;
    }
    return `${section === "paths" ? "path" : "webhook"} ${first}${second === undefined ? "" : ` ${second}`}`;
  }
  if (section === "components" && first === "schemas" && second !== undefined) {
    const users = operationsUsingSchema(document, second);
    const at = rest.length > 0 ? `, at ${rest.join("/")}` : "";
    return `schema ${second}${at}${users.length > 0 ? ` (used by ${users.join(", ")})` : ""}`;
  }
  return segments.join("/");
}
