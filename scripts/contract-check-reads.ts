// `node scripts/contract-check-reads.ts`: nothing the document declares goes unused. For every operation it lists
// what the document lets a caller send (query, path and header parameters, and the request body's fields,
// those of its objects and of the items of its lists included) and fails when the operation's handler
// never reads one of them, naming the operation and the input.
//
// How a read is found, with the TypeScript compiler's type checker: the generated types
// (generated/openapi.ts) declare each input once, as a property. The check starts at the handler that
// handlers/<area>/index.ts exports under the operationId and walks every function it reaches (calls, and
// functions passed along as values) in the service's own code. A property access, element access or
// destructuring whose property resolves to an input's declaration reads that input; so the code that reads
// has to keep the generated type (or a Pick, Omit or alias of it) on what it reads. Headers reach a handler
// as Node's IncomingHttpHeaders, so a header parameter is read where the reached code names it as a string
// (its lower-case name, e.g. `headers["idempotency-key"]`).
//
// A property the handler deliberately leaves alone says so in the document with `x-unread: <why>` (on the
// parameter or the schema property), and the check then accepts it and the document tells integrators.
import path from "node:path";
import ts from "typescript";
import { createProjectProgram } from "./contract-steps.ts";
import { bundleDocument, isRecord, operationsOf, resolvePointer, ROOT, type DocumentNode } from "./openapi-source.ts";

export interface UnreadInput {
  operationId: string;
  /** "query parameter", "path parameter", "header" or "body field". */
  kind: string;
  /** The parameter's name, or the field's path in the body (`items[].filename`). */
  name: string;
}

interface DeclaredInput extends UnreadInput {
  declarations: readonly ts.Declaration[];
  /** For headers: the lower-case name the code uses. */
  headerName?: string;
}

const PARAMETER_KINDS: Record<string, string> = {
  query: "query parameter",
  path: "path parameter",
  header: "header",
};

/** The non-optional type of a property of `type`, or undefined. */
function propertyType(checker: ts.TypeChecker, type: ts.Type, name: string, at: ts.Node): ts.Type | undefined {
  const property = checker.getPropertyOfType(type, name);
  if (!property) return undefined;
  const found = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(property, at));
  return found.flags & ts.TypeFlags.Never ? undefined : found;
}

/** The body's fields, recursing into declared objects and list items (not into free-form objects). */
function bodyFields(
  checker: ts.TypeChecker,
  type: ts.Type,
  at: ts.Node,
  prefix: string,
  seen: Set<ts.Type>,
): { name: string; declarations: readonly ts.Declaration[] }[] {
  if (seen.has(type)) return [];
  seen.add(type);
  const fields: { name: string; declarations: readonly ts.Declaration[] }[] = [];
  const isObject = (candidate: ts.Type): boolean =>
    (candidate.flags & ts.TypeFlags.Object) !== 0 &&
    !checker.isArrayType(candidate) &&
    checker.getPropertiesOfType(candidate).length > 0;
  for (const property of checker.getPropertiesOfType(type)) {
    const name = `${prefix}${property.getName()}`;
    fields.push({ name, declarations: property.getDeclarations() ?? [] });
    const declared = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(property, at));
    const item = checker.isArrayType(declared) ? checker.getTypeArguments(declared as ts.TypeReference)[0] : undefined;
    if (item && isObject(item)) fields.push(...bodyFields(checker, item, at, `${name}[].`, seen));
    else if (isObject(declared)) fields.push(...bodyFields(checker, declared, at, `${name}.`, seen));
  }
  return fields;
}

/** Every input the generated types declare for each path operation (webhook operations are sent, not served). */
function declaredInputs(program: ts.Program, root: string): DeclaredInput[] {
  const checker = program.getTypeChecker();
  const generated = program.getSourceFile(path.join(root, "generated/openapi.ts"));
  if (!generated) throw new Error("generated/openapi.ts is not part of the program: run `npm run generate`");
  const operationsDeclaration = generated.statements.find(
    (statement): statement is ts.InterfaceDeclaration =>
      ts.isInterfaceDeclaration(statement) && statement.name.text === "operations",
  );
  if (!operationsDeclaration) throw new Error("generated/openapi.ts declares no `operations` interface");
  const operations = checker.getTypeAtLocation(operationsDeclaration);
  const inputs: DeclaredInput[] = [];
  for (const operation of checker.getPropertiesOfType(operations)) {
    const operationId = operation.getName();
    if (operationId.startsWith("webhook")) continue;
    const type = checker.getTypeOfSymbolAtLocation(operation, operationsDeclaration);
    const parameters = propertyType(checker, type, "parameters", operationsDeclaration);
    for (const [location, kind] of Object.entries(PARAMETER_KINDS)) {
      const group = parameters && propertyType(checker, parameters, location, operationsDeclaration);
      for (const parameter of group ? checker.getPropertiesOfType(group) : [])
        inputs.push({
          operationId,
          kind,
          name: parameter.getName(),
          declarations: parameter.getDeclarations() ?? [],
          ...(location === "header" ? { headerName: parameter.getName().toLowerCase() } : {}),
        });
    }
    const body = propertyType(checker, type, "requestBody", operationsDeclaration);
    const content = body && propertyType(checker, body, "content", operationsDeclaration);
    for (const media of content ? checker.getPropertiesOfType(content) : []) {
      const schema = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(media, operationsDeclaration));
      for (const field of bodyFields(checker, schema, operationsDeclaration, "", new Set()))
        inputs.push({ operationId, kind: "body field", ...field });
    }
  }
  return inputs;
}

/** The handler each handlers/<area>/index.ts exports, by operationId. */
function handlerDeclarations(program: ts.Program, root: string): Map<string, ts.Declaration[]> {
  const checker = program.getTypeChecker();
  const found = new Map<string, ts.Declaration[]>();
  const areas = path.join(root, "handlers");
  for (const file of program.getSourceFiles()) {
    const relative = path.relative(areas, file.fileName);
    if (relative.startsWith("..") || !/^[^/]+\/index\.ts$/.test(relative)) continue;
    const moduleSymbol = checker.getSymbolAtLocation(file);
    if (!moduleSymbol) continue;
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      found.set(exported.getName(), symbol.getDeclarations() ?? []);
    }
  }
  return found;
}

/** The service's own code (not generated/, not packages, not declaration files). */
function isServiceCode(file: ts.SourceFile, root: string): boolean {
  const relative = path.relative(root, file.fileName);
  return (
    !file.isDeclarationFile &&
    !relative.startsWith("..") &&
    !relative.startsWith("node_modules") &&
    !relative.startsWith("generated")
  );
}

/** The code a declaration runs when it is called: a function's body, or an arrow function's initializer. */
function runnable(declaration: ts.Declaration): ts.Node | undefined {
  if (ts.isFunctionLike(declaration)) return declaration;
  if (ts.isVariableDeclaration(declaration) && declaration.initializer) {
    const initializer = declaration.initializer;
    if (ts.isArrowFunction(initializer) || ts.isFunctionExpression(initializer) || ts.isCallExpression(initializer))
      return initializer;
  }
  if (ts.isPropertyAssignment(declaration)) return declaration.initializer;
  return undefined;
}

interface Reads {
  declarations: Set<ts.Declaration>;
  strings: Set<string>;
}

/** What the handler and every function it reaches read: property declarations and string literals. */
function readsFrom(program: ts.Program, root: string, entry: readonly ts.Declaration[]): Reads {
  const checker = program.getTypeChecker();
  const reads: Reads = { declarations: new Set(), strings: new Set() };
  const visited = new Set<ts.Node>();
  const queue: ts.Node[] = [];
  const enqueue = (declaration: ts.Declaration): void => {
    const code = runnable(declaration);
    if (!code || visited.has(code) || !isServiceCode(code.getSourceFile(), root)) return;
    visited.add(code);
    queue.push(code);
  };
  const noteSymbol = (symbol: ts.Symbol | undefined): void => {
    if (!symbol) return;
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    for (const declaration of target.getDeclarations() ?? []) {
      reads.declarations.add(declaration);
      enqueue(declaration);
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node)) noteSymbol(checker.getSymbolAtLocation(node.name));
    else if (ts.isElementAccessExpression(node) && ts.isStringLiteralLike(node.argumentExpression)) {
      const objectType = checker.getNonNullableType(checker.getTypeAtLocation(node.expression));
      noteSymbol(checker.getPropertyOfType(objectType, node.argumentExpression.text));
    } else if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
      const key = node.propertyName ?? node.name;
      if (ts.isIdentifier(key) || ts.isStringLiteralLike(key)) {
        const objectType = checker.getNonNullableType(checker.getTypeAtLocation(node.parent));
        noteSymbol(checker.getPropertyOfType(objectType, key.text));
      }
    } else if (ts.isIdentifier(node)) noteSymbol(checker.getSymbolAtLocation(node));
    if (ts.isStringLiteralLike(node)) reads.strings.add(node.text);
    ts.forEachChild(node, visit);
  };
  for (const declaration of entry) enqueue(declaration);
  for (let next = queue.shift(); next; next = queue.shift()) visit(next);
  return reads;
}

/** The `x-unread` reasons the document gives, by operationId and input name. */
function unreadByDesign(document: DocumentNode): Set<string> {
  const allowed = new Set<string>();
  const resolve = (node: unknown): unknown =>
    isRecord(node) && typeof node.$ref === "string" ? resolve(resolvePointer(document, node.$ref)) : node;
  const walkSchema = (operationId: string, schema: unknown, prefix: string, seen: Set<unknown>): void => {
    const resolved = resolve(schema);
    if (!isRecord(resolved) || seen.has(resolved)) return;
    seen.add(resolved);
    for (const [name, property] of Object.entries(isRecord(resolved.properties) ? resolved.properties : {})) {
      const field = resolve(property);
      if (isRecord(field) && typeof field["x-unread"] === "string")
        allowed.add(`${operationId} body field ${prefix}${name}`);
      if (isRecord(field) && field.type === "array") walkSchema(operationId, field.items, `${prefix}${name}[].`, seen);
      else walkSchema(operationId, field, `${prefix}${name}.`, seen);
    }
  };
  for (const entry of operationsOf(document)) {
    if (entry.webhook || !entry.operationId) continue;
    for (const raw of Array.isArray(entry.operation.parameters) ? entry.operation.parameters : []) {
      const parameter = resolve(raw);
      if (isRecord(parameter) && typeof parameter["x-unread"] === "string")
        allowed.add(`${entry.operationId} ${PARAMETER_KINDS[String(parameter.in)] ?? ""} ${String(parameter.name)}`);
    }
    const body = resolve(entry.operation.requestBody);
    const content = isRecord(body) && isRecord(body.content) ? body.content : {};
    for (const media of Object.values(content))
      if (isRecord(media)) walkSchema(entry.operationId, media.schema, "", new Set());
  }
  return allowed;
}

/** Every declared input no handler reads (beyond those the document marks `x-unread`), and how many there are. */
export function checkReads(
  program: ts.Program,
  root = ROOT,
): { unread: UnreadInput[]; declared: number; operations: number } {
  const handlers = handlerDeclarations(program, root);
  const allowed = unreadByDesign(bundleDocument(root));
  const unread: UnreadInput[] = [];
  const byOperation = new Map<string, DeclaredInput[]>();
  const declared = declaredInputs(program, root);
  for (const input of declared)
    byOperation.set(input.operationId, [...(byOperation.get(input.operationId) ?? []), input]);
  for (const [operationId, inputs] of byOperation) {
    const entry = handlers.get(operationId);
    if (!entry) {
      unread.push(...inputs.map(({ operationId: id, kind, name }) => ({ operationId: id, kind, name })));
      continue;
    }
    const reads = readsFrom(program, root, entry);
    for (const input of inputs) {
      if (allowed.has(`${operationId} ${input.kind} ${input.name}`)) continue;
      const read =
        input.declarations.some((declaration) => reads.declarations.has(declaration)) ||
        (input.headerName !== undefined && reads.strings.has(input.headerName));
      if (!read) unread.push({ operationId, kind: input.kind, name: input.name });
    }
  }
  return { unread, declared: declared.length, operations: byOperation.size };
}

/** The check as a step: one line per unread input. */
export function readsStep(root = ROOT, program?: ts.Program): { ok: boolean; lines: string[] } {
  const { unread, declared, operations } = checkReads(
    program ?? createProjectProgram(root, "tsconfig.json", ["handlers/index.ts", "generated/openapi.ts"]),
    root,
  );
  if (unread.length === 0)
    return { ok: true, lines: [`${declared} inputs of ${operations} operations, each read by its handler`] };
  return {
    ok: false,
    lines: [
      ...unread.map(
        (input) => `${input.operationId}: ${input.kind} ${input.name} is declared but its handler never reads it`,
      ),
      "Read it in the handler (through its generated type), remove it from the document, or mark it `x-unread: <why>` there.",
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = process.argv[2] ? path.resolve(process.argv[2]) : ROOT;
  const result = readsStep(root);
  for (const line of result.lines) console.log(line);
  process.exit(result.ok ? 0 : 1);
}
