// The contract package's call beside the generic snippets of /docs: every operation of the published
// document (generated/openapi.json) carries an x-codeSamples entry in TypeScript, labelled with the
// package's name, that calls the operation by its own path and method through the package's client
// (or, for POST /token, makes the package's token provider); and every sample compiles under the
// project's strict options against the package's own types, so a sample that names a path, a parameter or
// a body field the document does not declare fails here.
import fs from "node:fs";
import path from "node:path";
import t, { type Test } from "tap";
import ts from "typescript";
import { tempDir } from "../helpers/temp-dir.ts";
import { loadDocument } from "../../http/openapi-document.ts";
import { SDK_PACKAGE } from "../../scripts/code-samples.ts";
import { ROOT } from "../../scripts/openapi-source.ts";

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

interface Sample {
  lang: string;
  label: string;
  source: string;
}

/** Every path operation of the published document with its x-codeSamples. */
function operations(): { key: string; operationId: string; method: string; path: string; samples: Sample[] }[] {
  const document = loadDocument();
  const found = [];
  for (const [pathKey, item] of Object.entries(document.paths ?? {}))
    for (const method of METHODS) {
      const operation = (item as Record<string, Record<string, unknown> | undefined>)[method];
      if (!operation) continue;
      found.push({
        key: `${method.toUpperCase()} ${pathKey}`,
        operationId: String(operation.operationId),
        method,
        path: pathKey,
        samples: (operation["x-codeSamples"] ?? []) as Sample[],
      });
    }
  return found;
}

/**
 * The compiler's complaints about each file, under the project's strict options, the package's name
 * resolving to its source (openapi/package/src/index.ts) as a consumer's install resolves it to its build.
 */
function compile(test: Test, files: Record<string, string>): Map<string, string[]> {
  const directory = tempDir(test, "code-samples-");
  const names = Object.entries(files).map(([name, source]) => {
    const file = path.join(directory, `${name}.ts`);
    fs.writeFileSync(file, source);
    return file;
  });
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
    types: ["node"],
    typeRoots: [path.join(ROOT, "node_modules/@types")],
    paths: { [SDK_PACKAGE]: [path.join(ROOT, "openapi/package/src/index.ts")] },
  };
  const program = ts.createProgram(names, options);
  const problems = new Map<string, string[]>(Object.keys(files).map((name) => [name, []]));
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const file = diagnostic.file ? path.basename(diagnostic.file.fileName, ".ts") : "(no file)";
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
    const line =
      diagnostic.file && diagnostic.start !== undefined
        ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1
        : 0;
    (problems.get(file) ?? problems.set(file, []).get(file))?.push(`line ${line}: ${text}`);
  }
  return problems;
}

t.test("every operation shows the contract package's call, and every call compiles strict", async (t) => {
  const listed = operations();
  t.ok(listed.length > 20, `${listed.length} operations`);
  const sources: Record<string, string> = {};
  for (const operation of listed) {
    const sdk = operation.samples.filter((sample) => sample.label === SDK_PACKAGE);
    t.equal(sdk.length, 1, `${operation.key} has one ${SDK_PACKAGE} sample`);
    const [sample] = sdk;
    if (!sample) continue;
    t.equal(sample.lang, "typescript", `${operation.key}: in TypeScript`);
    t.match(sample.source, `from "${SDK_PACKAGE}"`, `${operation.key}: it imports the package`);
    if (operation.operationId === "issueToken") t.match(sample.source, /createTokenProvider\(/);
    else {
      t.match(sample.source, `await api.${operation.method.toUpperCase()}(`, `${operation.key}: by its method`);
      t.match(sample.source, JSON.stringify(operation.path), `${operation.key}: and its path`);
    }
    sources[operation.operationId] = sample.source;
  }
  const problems = compile(t, sources);
  for (const [operationId, found] of problems) t.same(found, [], `the ${operationId} sample compiles`);
});

t.test("a call the package's types refuse does not compile (the check above can fail)", async (t) => {
  const client = `import { createIntegratorClient } from "${SDK_PACKAGE}";\nconst api = createIntegratorClient({ baseUrl: "http://localhost:8080" });\n`;
  const problems = compile(t, {
    unknownPath: `${client}await api.GET("/v1/no-such-path");\n`,
    unknownFilter: `${client}await api.GET("/v1/webhooks/deliveries", { params: { query: { colour: "red" } } });\n`,
    wrongBody: `${client}await api.POST("/v1/intake/submit", { body: { filename: 42 } });\n`,
  });
  for (const [name, found] of problems) t.ok(found.length > 0, `${name}: ${found[0] ?? "compiled"}`);
});
