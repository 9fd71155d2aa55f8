// `node scripts/contract-check-breaking.ts [--base FILE --current FILE]`: compares the document as written
// (openapi/openapi.yaml, bundled in memory the way `npm run generate` bundles it, so an edit is judged
// before anything is regenerated) with the last released one (the newest openapi/released/<version>.json)
// and exits 1 on a change that breaks an existing integrator, unless info.version's major part grew.
// `--current` takes a bundled JSON document or a YAML source instead. Each change names the operation and
// the field; a change in a component schema names the operations that use it. A focused check (no diff
// tool for OpenAPI 3.1 installs from npm here):
// - an operation (path + method) or webhook removed, or its operationId changed;
// - a parameter added as required, made required, or removed from an operation that had it;
// - a request body made required; in a schema a request reaches, a property made required, an enum value
//   removed, or an enum (or const) put on a string that accepted any value;
// - a success response status removed; in a schema a response reaches, a property removed or no longer
//   required;
// - a component schema or security scheme removed, or an OAuth2 flow removed.
//
// `--release VERSION [--date YYYY-MM-DD]` cuts a release of the document as written: it checks that VERSION
// is the bump the changes since the last release call for (scripts/contract-release.ts), then sets
// info.version and the contract package's version, regenerates generated/, writes the snapshot
// openapi/released/VERSION.json and turns CHANGELOG.md's "Unreleased" prose into the version's section,
// followed by the additions and removals listed from the diff (scripts/contract-diff.ts) and this check's
// findings. It writes nothing when the version is not the right one.
import fs from "node:fs";
import path from "node:path";
import { withCodeSamples } from "./code-samples.ts";
import { contractChanged, contractDiff } from "./contract-diff.ts";
import {
  CHANGELOG,
  draftSection,
  latestRelease,
  releasedVersions,
  requiredBump,
  snapshotFile,
  unreleasedProse,
  versionProblem,
  withRelease,
} from "./contract-release.ts";
import { render, writeOutputs } from "./generate.ts";
import {
  bundleDocument,
  checkReferences,
  operationsUsingSchema,
  readDocument,
  ROOT,
  SOURCE,
} from "./openapi-source.ts";

type Node = Record<string, unknown>;
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;

const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value);
const asNode = (value: unknown): Node => (isNode(value) ? value : {});
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : []);

function resolver(document: Node) {
  return (value: unknown): Node => {
    let current = value;
    for (let depth = 0; depth < 10 && isNode(current) && typeof current.$ref === "string"; depth++) {
      current = current.$ref
        .slice(2)
        .split("/")
        .map((segment) => decodeURIComponent(segment).replace(/~1/g, "/").replace(/~0/g, "~"))
        .reduce<unknown>((node, key) => asNode(node)[key], document);
    }
    return asNode(current);
  };
}

function operationsOf(document: Node): Map<string, Node> {
  const found = new Map<string, Node>();
  for (const [section, prefix] of [
    ["paths", ""],
    ["webhooks", "webhook "],
  ] as const)
    for (const [key, item] of Object.entries(asNode(document[section])))
      for (const method of METHODS) {
        const operation = asNode(item)[method];
        if (isNode(operation)) found.set(`${prefix}${method.toUpperCase()} ${key}`, operation);
      }
  return found;
}

/** Names of the component schemas reachable from `roots` through $refs. */
function reachableSchemas(document: Node, roots: unknown[]): Set<string> {
  const seen = new Set<string>();
  const schemas = asNode(asNode(document.components).schemas);
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!isNode(node)) return;
    if (typeof node.$ref === "string" && node.$ref.startsWith("#/components/schemas/")) {
      const name = node.$ref.slice("#/components/schemas/".length);
      if (!seen.has(name)) {
        seen.add(name);
        visit(schemas[name]);
      }
    }
    Object.values(node).forEach(visit);
  };
  roots.forEach(visit);
  return seen;
}

function sides(document: Node): { requests: Set<string>; responses: Set<string> } {
  const resolve = resolver(document);
  const requestRoots: unknown[] = [];
  const responseRoots: unknown[] = [];
  for (const [key, operation] of operationsOf(document)) {
    // A webhook's body is sent by the service: for integrators it is a response.
    const toResponses = key.startsWith("webhook ");
    (toResponses ? responseRoots : requestRoots).push(resolve(operation.requestBody), operation.parameters);
    for (const response of Object.values(asNode(operation.responses)))
      (toResponses ? requestRoots : responseRoots).push(resolve(response));
  }
  const parameters = asNode(asNode(document.components).parameters);
  const requests = reachableSchemas(document, [...requestRoots, ...Object.values(parameters)]);
  return { requests, responses: reachableSchemas(document, responseRoots) };
}

/** A plain string schema: no enum, const, pattern or composition narrows what it accepts. */
function acceptsAnyString(schema: Node): boolean {
  return (
    schema.type === "string" &&
    !("enum" in schema) &&
    !("const" in schema) &&
    !("$ref" in schema) &&
    !("anyOf" in schema) &&
    !("oneOf" in schema) &&
    !("allOf" in schema)
  );
}

function parameterKey(parameter: Node): string {
  return `${String(parameter.in)}:${String(parameter.name).toLowerCase()}`;
}

/** " (used by op1, op2)": the operations a component schema's change reaches. */
function usedBy(document: Node, schemaName: string): string {
  const users = operationsUsingSchema(document, schemaName);
  return users.length === 0 ? "" : ` (used by ${users.join(", ")})`;
}

export function breakingChanges(base: Node, current: Node): string[] {
  const changes: string[] = [];
  const resolveBase = resolver(base);
  const resolveCurrent = resolver(current);
  const currentOperations = operationsOf(current);

  const compareOperation = (key: string, before: Node, after: Node | undefined): void => {
    if (!after) {
      changes.push(`${key}: operation removed`);
      return;
    }
    if (before.operationId && before.operationId !== after.operationId)
      changes.push(
        `${key}: operationId ${JSON.stringify(before.operationId)} became ${JSON.stringify(after.operationId)}`,
      );
    const beforeParameters = new Map(
      (Array.isArray(before.parameters) ? before.parameters : []).map((p) => [
        parameterKey(resolveBase(p)),
        resolveBase(p),
      ]),
    );
    const afterParameters = new Map(
      (Array.isArray(after.parameters) ? after.parameters : []).map((p) => [
        parameterKey(resolveCurrent(p)),
        resolveCurrent(p),
      ]),
    );
    // A webhook's parameters (its headers) are sent by the service: one more required header is additive
    // for receivers, while a removed one may break them.
    if (!key.startsWith("webhook "))
      for (const [name, parameter] of afterParameters) {
        const previous = beforeParameters.get(name);
        if (parameter.required === true && previous?.required !== true)
          changes.push(`${key}: parameter ${name} is ${previous ? "now" : "added as"} required`);
      }
    for (const name of beforeParameters.keys())
      if (!afterParameters.has(name)) changes.push(`${key}: parameter ${name} removed`);
    if (!key.startsWith("webhook "))
      for (const [name, parameter] of afterParameters) {
        const previous = beforeParameters.get(name);
        if (!previous) continue;
        const was = resolveBase(previous.schema);
        const is = resolveCurrent(parameter.schema);
        if (Array.isArray(was.enum) && Array.isArray(is.enum))
          for (const value of was.enum)
            if (!is.enum.includes(value))
              changes.push(`${key}: parameter ${name}: enum value ${JSON.stringify(value)} removed`);
        if (acceptsAnyString(was) && !acceptsAnyString(is))
          changes.push(`${key}: parameter ${name}: a string that accepted any value is now restricted`);
      }
    if (resolveCurrent(after.requestBody).required === true && resolveBase(before.requestBody).required !== true)
      changes.push(`${key}: request body is now required`);
    if (!key.startsWith("webhook "))
      for (const status of Object.keys(asNode(before.responses)))
        if (/^2/.test(status) && !(status in asNode(after.responses)))
          changes.push(`${key}: success response ${status} removed`);
  };
  for (const [key, before] of operationsOf(base)) {
    const from = changes.length;
    compareOperation(key, before, currentOperations.get(key));
    const name = typeof before.operationId === "string" ? ` (${before.operationId})` : "";
    for (let index = from; index < changes.length; index++) changes[index] += name;
  }

  const baseSchemas = asNode(asNode(base.components).schemas);
  const currentSchemas = asNode(asNode(current.components).schemas);
  const { requests, responses } = sides(current);
  const compare = (where: string, before: Node, after: Node, schemaName: string) => {
    const inRequests = requests.has(schemaName);
    const inResponses = responses.has(schemaName);
    const beforeRequired = strings(before.required);
    const afterRequired = strings(after.required);
    if (inRequests)
      for (const name of afterRequired)
        if (!beforeRequired.includes(name)) changes.push(`${where}: property ${name} is now required in requests`);
    if (inResponses) {
      for (const name of beforeRequired)
        if (!afterRequired.includes(name)) changes.push(`${where}: property ${name} is no longer always in responses`);
      for (const name of Object.keys(asNode(before.properties)))
        if (!(name in asNode(after.properties))) changes.push(`${where}: property ${name} removed`);
    }
    if (inRequests && Array.isArray(before.enum) && Array.isArray(after.enum))
      for (const value of before.enum)
        if (!after.enum.includes(value)) changes.push(`${where}: enum value ${JSON.stringify(value)} removed`);
    if (inRequests && acceptsAnyString(before) && !acceptsAnyString(after) && after.type === "string")
      changes.push(`${where}: a string that accepted any value is now restricted (enum or const added)`);
    for (const [name, property] of Object.entries(asNode(before.properties))) {
      const next = asNode(after.properties)[name];
      if (isNode(property) && isNode(next) && !property.$ref && !next.$ref)
        compare(`${where}.${name}`, property, next, schemaName);
    }
  };
  for (const [name, schema] of Object.entries(baseSchemas)) {
    const next = currentSchemas[name];
    if (!isNode(next)) {
      changes.push(`components.schemas.${name}: schema removed${usedBy(base, name)}`);
      continue;
    }
    const before = changes.length;
    compare(`components.schemas.${name}`, asNode(schema), next, name);
    const users = usedBy(current, name);
    for (let index = before; index < changes.length; index++) changes[index] += users;
  }

  const currentSchemes = asNode(asNode(current.components).securitySchemes);
  for (const [name, scheme] of Object.entries(asNode(asNode(base.components).securitySchemes))) {
    const next = currentSchemes[name];
    if (!isNode(next)) {
      changes.push(`components.securitySchemes.${name}: removed`);
      continue;
    }
    for (const flow of Object.keys(asNode(asNode(scheme).flows)))
      if (!(flow in asNode(next.flows))) changes.push(`components.securitySchemes.${name}: flow ${flow} removed`);
  }
  return changes;
}

export function majorOf(version: unknown): number {
  const match = /^(\d+)\./.exec(String(version));
  if (!match) throw new Error(`info.version ${JSON.stringify(version)} is not a semantic version`);
  return Number(match[1]);
}

/** The verdict: breaking changes are allowed only with a higher major version. */
export function checkBreaking(base: Node, current: Node): { ok: boolean; changes: string[]; message: string } {
  const changes = breakingChanges(base, current);
  const from = String(asNode(base.info).version);
  const to = String(asNode(current.info).version);
  if (changes.length === 0) return { ok: true, changes, message: `No breaking change since ${from}.` };
  if (majorOf(to) > majorOf(from))
    return {
      ok: true,
      changes,
      message: `${changes.length} breaking change(s), allowed by the major version ${from} -> ${to}.`,
    };
  return {
    ok: false,
    changes,
    message: `${changes.length} breaking change(s) against the released ${from} while info.version is ${to}: raise the major version (and say so in CHANGELOG.md) or keep the change additive.`,
  };
}

/** A document given on the command line: bundled JSON, or a YAML source read the way generate reads it. */
function readGiven(file: string): Node {
  const text = fs.readFileSync(file, "utf8");
  if (!/\.ya?ml$/.test(file)) return JSON.parse(text) as Node;
  const document = readDocument(text, file);
  checkReferences(document, file);
  return document;
}

/** `text` with the one line that `pattern` matches replaced, or an error naming `file`. */
function replaceOnce(text: string, pattern: RegExp, replacement: string, file: string): string {
  const matches = text.match(new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`)) ?? [];
  if (matches.length !== 1) throw new Error(`${file}: expected one line matching ${String(pattern)}`);
  return text.replace(pattern, replacement);
}

/** The release of the document as written as `version` (see the top of this file); answers what it did. */
export async function cutRelease(version: string, date: string): Promise<string[]> {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`--date ${JSON.stringify(date)} is not YYYY-MM-DD`);
  if (releasedVersions().includes(version))
    throw new Error(`${version} is released already (${snapshotFile(version)})`);
  const previous = latestRelease();
  const document = bundleDocument();
  const breaking = breakingChanges(previous.document, document);
  const listed = contractDiff(previous.document, document);
  // A snapshot is the published rendering, with the contract package's call on every operation.
  const published = await withCodeSamples(document);
  const required = requiredBump({ breaking, listed, changed: contractChanged(previous.document, published) });
  const problem = versionProblem(previous.version, version, required);
  if (problem) throw new Error(`Not released: ${problem}.${breaking.map((change) => `\n  ${change}`).join("")}`);
  const changelogPath = path.join(ROOT, CHANGELOG);
  const changelog = fs.readFileSync(changelogPath, "utf8");
  const section = draftSection({
    version,
    date,
    previous: previous.version,
    prose: unreleasedProse(changelog),
    changes: listed,
    breaking,
  });

  const sourcePath = path.join(ROOT, SOURCE);
  fs.writeFileSync(
    sourcePath,
    replaceOnce(
      fs.readFileSync(sourcePath, "utf8"),
      /^(info:\n(?:[ \t].*\n|\n)*? {2}version: ).*$/m,
      `$1${version}`,
      SOURCE,
    ),
  );
  if (asNode(bundleDocument().info).version !== version) throw new Error(`${SOURCE}: info.version was not set`);
  const manifest = "openapi/package/package.json";
  const manifestPath = path.join(ROOT, manifest);
  fs.writeFileSync(
    manifestPath,
    replaceOnce(
      fs.readFileSync(manifestPath, "utf8"),
      /^ {2}"version": ".*",$/m,
      `  "version": "${version}",`,
      manifest,
    ),
  );
  const outputs = await render();
  const written = writeOutputs(outputs).filter((line) => line.startsWith("wrote"));
  const snapshot = outputs.get("generated/openapi.json");
  if (snapshot === undefined) throw new Error("npm run generate rendered no generated/openapi.json");
  fs.writeFileSync(path.join(ROOT, snapshotFile(version)), snapshot);
  fs.writeFileSync(changelogPath, withRelease(changelog, section));
  const counts = ["added", "removed"].map(
    (change) => `${listed.filter((entry) => entry.change === change).length} ${change}`,
  );
  return [
    `Released ${version} on ${date}, a ${required} release after ${previous.version} (${counts.join(", ")}, ${breaking.length} breaking):`,
    `  wrote     ${SOURCE} (info.version ${version})`,
    `  wrote     ${manifest} (version ${version})`,
    ...written.map((line) => `  ${line}`),
    `  wrote     ${snapshotFile(version)}`,
    `  wrote     ${CHANGELOG} (the section ${version}: the Unreleased prose and the drafted list; read it over)`,
    `Then: npm run check:contract, commit, and tag the commit v${version}.`,
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const value = (name: string): string | undefined => {
    const at = process.argv.indexOf(name);
    return at === -1 ? undefined : (process.argv[at + 1] ?? "");
  };
  const option = (name: string): string | undefined => {
    const given = value(name);
    return given === undefined ? undefined : path.resolve(given);
  };
  try {
    const release = value("--release");
    if (release !== undefined) {
      const lines = await cutRelease(release, value("--date") ?? new Date().toISOString().slice(0, 10));
      for (const line of lines) console.log(line);
      process.exit(0);
    }
    const base = option("--base") ?? path.join(ROOT, latestRelease().file);
    const current = option("--current");
    const verdict = checkBreaking(readGiven(base), current === undefined ? bundleDocument() : readGiven(current));
    console.log(
      `${current === undefined ? `${SOURCE} as written` : path.relative(ROOT, current)} against ${path.relative(ROOT, base)}:`,
    );
    for (const change of verdict.changes) console.log(`  ${change}`);
    console.log(verdict.message);
    process.exit(verdict.ok ? 0 : 1);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
