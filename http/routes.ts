// The operation a request is for, found by method and path before anything is read of its body: every
// path of the document compiled once (static paths in a map, templated ones as one regular expression
// each, most specific first). Its path parameters, as text, are what the parameter checks read before the
// schema validator coerces them (http/request-validation.ts).
import type { OpenAPIV3_1 } from "openapi-types";

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;

export interface RouteMatch {
  operationId: string;
  /** The document's path template, e.g. /v1/intake/submissions/{submission_id}. */
  template: string;
  /** Path parameters, percent-decoded (those named in `undecodable` as they were sent). */
  params: Record<string, string>;
  /** Path parameters whose percent-encoding is malformed (`%ZZ`, a truncated UTF-8 sequence). */
  undecodable: string[];
}

interface CompiledPath {
  template: string;
  pattern: RegExp | undefined;
  names: string[];
  /** Upper-case method → operationId. */
  operations: Map<string, string>;
}

export interface RouteTable {
  /** The operation of a request, or undefined (no such path or no such method). */
  match(method: string, path: string): RouteMatch | undefined;
}

export function compileRoutes(document: OpenAPIV3_1.Document): RouteTable {
  const exact = new Map<string, CompiledPath>();
  const templated: CompiledPath[] = [];
  for (const [template, pathItem] of Object.entries(document.paths ?? {})) {
    const operations = new Map<string, string>();
    for (const method of METHODS) {
      const operationId = pathItem?.[method]?.operationId;
      if (operationId) operations.set(method.toUpperCase(), operationId);
    }
    const names: string[] = [];
    if (!template.includes("{")) {
      exact.set(template, { template, pattern: undefined, names, operations });
      continue;
    }
    const source = template
      .split(/(\{[^}]+\})/)
      .map((part) => {
        const name = /^\{([^}]+)\}$/.exec(part)?.[1];
        if (name === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
        names.push(name);
        return "([^/]+)";
      })
      .join("");
    templated.push({ template, pattern: new RegExp(`^${source}$`), names, operations });
  }
  // The most specific template (the most literal characters) wins, as in openapi-backend.
  templated.sort((a, b) => b.template.replace(/\{.*?\}/g, "").length - a.template.replace(/\{.*?\}/g, "").length);

  return {
    match(method, path) {
      const found = exact.get(path);
      const exactOperation = found?.operations.get(method);
      if (found && exactOperation)
        return { operationId: exactOperation, template: found.template, params: {}, undecodable: [] };
      for (const candidate of templated) {
        const groups = candidate.pattern?.exec(path);
        if (!groups) continue;
        const operationId = candidate.operations.get(method);
        if (!operationId) continue;
        const params: Record<string, string> = {};
        const undecodable: string[] = [];
        candidate.names.forEach((name, index) => {
          const text = groups[index + 1] ?? "";
          try {
            params[name] = decodeURIComponent(text);
          } catch {
            // Still this operation's request: authenticated as such, then refused at ["path", name].
            params[name] = text;
            undecodable.push(name);
          }
        });
        return { operationId, template: candidate.template, params, undecodable };
      }
      return undefined;
    },
  };
}
