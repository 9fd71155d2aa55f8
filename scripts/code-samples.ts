// The contract package's call for every operation of the document, written from the document itself as an
// `x-codeSamples` entry (the extension Scalar, Redoc and Redocly show beside the snippets they generate):
// the client made with the document's server and, where the operation needs one, a token provider; then
// `api.GET("/v1/…", { params, body })` with the operation's path, its parameters' examples and its JSON
// body's first example. scripts/generate.ts adds them to generated/openapi.json, so /docs shows the SDK's
// call beside curl and fetch for each operation and it cannot drift from the document;
// test/contract/code-samples.test.ts compiles every sample against the package's types.
import { format } from "prettier";
import { isRecord, operationsOf, resolvePointer, type DocumentNode, type OperationEntry } from "./openapi-source.ts";

/** The package a sample imports, and the name the reference page shows it under. */
export const SDK_PACKAGE = "integrator-api-contract";

/** The operation `createTokenProvider` calls: its sample is the provider itself, not a call by path. */
const TOKEN_OPERATION = "issueToken";

/**
 * Query parameters a sample leaves out, though they have examples: the paging cursor (it comes from the
 * previous page's `next_cursor`), acting for another tenant (platform_admin only) and the callback's
 * signature in the query (the sample sends it in its header).
 */
const NOT_IN_SAMPLES = new Set(["cursor", "tenant_id", "signature"]);

/** The request header the client sends by itself on the operations that take it. */
const IDEMPOTENCY_HEADER = "Idempotency-Key";

interface Parameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  example?: unknown;
  examples?: Record<string, unknown>;
}

/** A list in the document, or none. */
const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? (value as unknown[]) : []);

const deref = (document: DocumentNode, node: unknown): unknown => {
  let current = node;
  for (let depth = 0; isRecord(current) && typeof current.$ref === "string" && depth < 20; depth++)
    current = resolvePointer(document, current.$ref);
  return current;
};

/** A parameter's example: its `example`, or the value of its first `examples` entry. */
export function parameterExample(document: DocumentNode, parameter: Parameter): unknown {
  if (parameter.example !== undefined) return parameter.example;
  const [first] = Object.values(parameter.examples ?? {});
  const example = deref(document, first);
  return isRecord(example) ? example.value : undefined;
}

/** The operation's parameters, those of its path item included (the operation's own win by name and place). */
export function parametersOf(document: DocumentNode, entry: OperationEntry): Parameter[] {
  const item = deref(document, (document.paths as DocumentNode | undefined)?.[entry.path]);
  const listed = [...listOf(isRecord(item) ? item.parameters : undefined), ...listOf(entry.operation.parameters)].map(
    (parameter) => deref(document, parameter) as Parameter,
  );
  const byKey = new Map(listed.map((parameter) => [`${parameter.in}:${parameter.name}`, parameter]));
  return [...byKey.values()];
}

/** The first example of the operation's JSON body, or undefined when it has none (or no JSON body). */
function bodyExample(document: DocumentNode, entry: OperationEntry): { value: unknown } | undefined {
  const body = deref(document, entry.operation.requestBody);
  if (!isRecord(body) || !isRecord(body.content)) return undefined;
  const media = deref(document, body.content["application/json"]);
  if (!isRecord(media)) return undefined;
  if (media.example !== undefined) return { value: media.example };
  const [first] = Object.values(isRecord(media.examples) ? media.examples : {});
  const example = deref(document, first);
  return isRecord(example) && "value" in example ? { value: example.value } : undefined;
}

/** The document's first server with its variables' defaults, e.g. http://localhost:8080. */
function serverUrl(document: DocumentNode): string {
  const [server] = listOf(document.servers);
  if (!isRecord(server) || typeof server.url !== "string") throw new Error("the document names no server");
  const variables = isRecord(server.variables) ? server.variables : {};
  return server.url.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const variable = variables[name];
    if (!isRecord(variable) || typeof variable.default !== "string")
      throw new Error(`server variable ${name} has no default`);
    return variable.default;
  });
}

/** The client id of the document's client credentials example of the token operation. */
function exampleClientId(document: DocumentNode): string {
  const entry = operationsOf(document).find((candidate) => candidate.operationId === TOKEN_OPERATION);
  const body = entry && deref(document, entry.operation.requestBody);
  const content = isRecord(body) && isRecord(body.content) ? body.content : {};
  for (const media of Object.values(content)) {
    const examples = isRecord(media) && isRecord(media.examples) ? media.examples : {};
    for (const example of Object.values(examples)) {
      const value = (deref(document, example) as { value?: Record<string, unknown> } | undefined)?.value;
      if (value?.grant_type === "client_credentials" && typeof value.client_id === "string") return value.client_id;
    }
  }
  throw new Error(`${TOKEN_OPERATION} has no client_credentials example to take a client id from`);
}

/** How the operation is authenticated: a bearer token from a token provider, a portal credential, or nothing. */
function authenticationOf(document: DocumentNode, entry: OperationEntry): "token" | "portal" | "none" {
  const requirements = (entry.operation.security ?? document.security ?? []) as Record<string, unknown>[];
  const schemes = new Set(requirements.flatMap((requirement) => Object.keys(requirement)));
  if (schemes.size === 0) return "none";
  if (schemes.size === 1 && schemes.has("PortalSession")) return "portal";
  return "token";
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A value as a TypeScript literal (prettier lays it out). */
function literal(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(literal).join(", ")}]`;
  if (isRecord(value))
    return `{ ${Object.entries(value)
      .map(([key, item]) => `${IDENTIFIER.test(key) ? key : JSON.stringify(key)}: ${literal(item)}`)
      .join(", ")} }`;
  return JSON.stringify(value) ?? "undefined";
}

/** The TypeScript of one operation's call through the contract package, unformatted. */
function sampleSource(document: DocumentNode, entry: OperationEntry): string {
  const baseUrl = JSON.stringify(serverUrl(document));
  if (entry.operationId === TOKEN_OPERATION)
    return [
      `import { createTokenProvider } from "${SDK_PACKAGE}";`,
      ``,
      `// POST /token by the client credentials grant: the provider`,
      `// keeps the token and fetches the next one before it expires.`,
      `// Give it to createIntegratorClient as its token.`,
      `const token = createTokenProvider({ baseUrl: ${baseUrl}, clientId: ${JSON.stringify(exampleClientId(document))}, clientSecret: process.env.CLIENT_SECRET ?? "" });`,
      `const accessToken = await token();`,
    ].join("\n");

  const where = `${entry.method.toUpperCase()} ${entry.path}`;
  const params: Record<string, Record<string, unknown>> = {};
  let idempotent = false;
  let filters = 0;
  for (const parameter of parametersOf(document, entry)) {
    if (parameter.in === "header" && parameter.name === IDEMPOTENCY_HEADER) {
      idempotent = true;
      continue;
    }
    if (parameter.in === "query" && NOT_IN_SAMPLES.has(parameter.name)) continue;
    const example = parameterExample(document, parameter);
    if (example === undefined) {
      if (parameter.required)
        throw new Error(`${where}: the ${parameter.in} parameter ${parameter.name} has no example`);
      continue;
    }
    (params[parameter.in] ??= {})[parameter.name] = example;
    if (parameter.in === "query" && !parameter.required) filters++;
  }
  const body = bodyExample(document, entry);
  const requestBody = deref(document, entry.operation.requestBody);
  if (!body && isRecord(requestBody) && requestBody.required === true)
    throw new Error(`${where}: its request body has no JSON example`);

  const options: string[] = [];
  if (Object.keys(params).length > 0) options.push(`params: ${literal(params)}`);
  if (body) options.push(`body: ${literal(body.value)}`);
  const call = `await api.${entry.method.toUpperCase()}(${JSON.stringify(entry.path)}${
    options.length > 0 ? `, { ${options.join(", ")} }` : ""
  });`;

  const authentication = authenticationOf(document, entry);
  const lines = [`import { createIntegratorClient } from "${SDK_PACKAGE}";`, ``];
  if (authentication === "token")
    lines.push(
      `// An access token, or the package's createTokenProvider(…)`,
      `const api = createIntegratorClient({ baseUrl: ${baseUrl}, token: process.env.INTEGRATOR_TOKEN });`,
    );
  else if (authentication === "portal")
    lines.push(
      `// The credential of a portal link (what follows #token=)`,
      `const api = createIntegratorClient({ baseUrl: ${baseUrl}, token: process.env.PORTAL_TOKEN });`,
    );
  else lines.push(`const api = createIntegratorClient({ baseUrl: ${baseUrl} });`);
  lines.push(``);
  if (idempotent)
    lines.push(
      `// Each call carries a new ${IDEMPOTENCY_HEADER} (a retry cannot`,
      `// act twice); to choose it, add withIdempotencyKey("order-4711").`,
    );
  if (filters > 1) lines.push(`// Every query parameter is optional; they combine.`);
  lines.push(`const { data, error } = ${call}`, `console.log(data ?? error);`);
  return lines.join("\n");
}

/** One operation's sample, laid out by prettier for the reference page's narrow code panel. */
export async function codeSample(document: DocumentNode, entry: OperationEntry): Promise<string> {
  const source = sampleSource(document, entry);
  return (await format(source, { parser: "typescript", printWidth: 72, trailingComma: "all" })).trimEnd();
}

/**
 * A copy of `document` with an `x-codeSamples` entry (TypeScript, the contract package's call) on every
 * operation of its paths; the webhooks section is sent by the service, not called, and gets none.
 */
export async function withCodeSamples(document: DocumentNode): Promise<DocumentNode> {
  const copy = structuredClone(document);
  for (const entry of operationsOf(copy)) {
    if (entry.webhook) continue;
    const sample = { lang: "typescript", label: SDK_PACKAGE, source: await codeSample(copy, entry) };
    entry.operation["x-codeSamples"] = [sample, ...listOf(entry.operation["x-codeSamples"])];
  }
  return copy;
}
