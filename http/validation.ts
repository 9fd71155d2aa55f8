// Maps express-openapi-validator's errors to FastAPI's 422 shape with pydantic v2 type names, or to the
// coded answer an operation or parameter declares with the `x-validation-error` extension.
import type { Request } from "express";
import { depthOf, parseMarkingInexactIntegers, unrepresentablePaths } from "../foundation/json-limits.ts";
import { instantOf } from "../db/timestamps.ts";
import { decodePointerSegment } from "./openapi-document.ts";

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** What the document's `x-validation-error` extension asks for instead of the 422 list. */
export interface ValidationOverride {
  status: number;
  code?: string;
  oauth_error?: string;
}

interface ValidatorErrorItem {
  path: string;
  message: string;
  errorCode?: string;
}

const INPUT_MAX_DEPTH = 16;

const LOCATION: Record<string, string> = {
  body: "body",
  query: "query",
  params: "path",
  path: "path",
  headers: "header",
  header: "header",
  cookies: "cookie",
};

/** "/body/items/0/filename" -> ["body", "items", 0, "filename"] */
export function locFromPath(path: string): (string | number)[] {
  const segments = path
    .replace(/^\./, "")
    .split(/[/.]/)
    .filter((s) => s.length > 0)
    .map(decodePointerSegment);
  const [first, ...rest] = segments;
  const head = LOCATION[first ?? ""] ?? "body";
  const loc: (string | number)[] = [head];
  if (!(first && first in LOCATION)) loc.push(...segments);
  else loc.push(...rest);
  return loc.map((segment, index) =>
    index > 0 && typeof segment === "string" && /^(0|[1-9]\d{0,8})$/.test(segment) ? Number(segment) : segment,
  );
}

function pick(root: unknown, keys: (string | number)[]): { found: boolean; value: unknown } {
  let current: unknown = root;
  for (const key of keys) {
    if (current === null || typeof current !== "object" || !(key in (current as Record<string, unknown>)))
      return { found: false, value: undefined };
    current = (current as Record<string | number, unknown>)[key];
  }
  return { found: true, value: current };
}

function requestPart(req: Request, location: string): unknown {
  switch (location) {
    case "body":
      return req.body;
    case "query":
      return req.query;
    case "path":
      return req.params;
    case "header":
      return req.headers;
    default:
      return undefined;
  }
}

const firstNumber = (message: string): number | undefined => {
  const match = /(-?\d+(?:\.\d+)?)/.exec(message);
  return match ? Number(match[1]) : undefined;
};

const TYPE_NAMES: Record<string, [string, string]> = {
  string: ["string_type", "Input should be a valid string"],
  integer: ["int_type", "Input should be a valid integer"],
  number: ["float_type", "Input should be a valid number"],
  boolean: ["bool_type", "Input should be a valid boolean"],
  object: ["dict_type", "Input should be a valid dictionary"],
  array: ["list_type", "Input should be a valid list"],
};

/** Parameters arrive as text: one that is no integer is pydantic's int_parsing, as FastAPI answers it. */
const TEXT_LOCATIONS = new Set(["query", "path", "header"]);
const INT_PARSING = {
  type: "int_parsing",
  msg: "Input should be a valid integer, unable to parse string as an integer",
};

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function toIssue(item: ValidatorErrorItem, req: Request): ValidationIssue {
  const loc = locFromPath(item.path);
  const keyword = (item.errorCode ?? "").replace(/\.openapi\.validation$/, "");
  const [location, ...keys] = loc;
  const part = requestPart(req, String(location));
  const lookupKeys = location === "header" ? keys.map((k) => String(k).toLowerCase()) : keys;
  const { found, value } = pick(part, lookupKeys);
  const issue = (type: string, msg: string, ctx?: Record<string, unknown>, withInput = true): ValidationIssue => {
    const result: ValidationIssue = { loc, msg, type };
    // A huge or deeply nested input is not echoed back: it could not be serialised safely.
    if (withInput && found && depthOf(value, INPUT_MAX_DEPTH) <= INPUT_MAX_DEPTH) result.input = value;
    if (ctx) result.ctx = ctx;
    return result;
  };
  const bound = firstNumber(item.message);
  switch (keyword) {
    case "required": {
      const parent = pick(part, lookupKeys.slice(0, -1));
      const result: ValidationIssue = { loc, msg: "Field required", type: "missing" };
      if (location === "body" && parent.found && depthOf(parent.value, INPUT_MAX_DEPTH) <= INPUT_MAX_DEPTH)
        result.input = parent.value;
      return result;
    }
    case "type": {
      const allowed = item.message
        .replace(/^must be /, "")
        .split(",")
        .filter((t) => t !== "null");
      const declared = allowed[0] ?? "string";
      if (declared === "integer" && allowed.length === 1 && TEXT_LOCATIONS.has(String(location)))
        return issue(INT_PARSING.type, INT_PARSING.msg);
      const [type, msg] = TYPE_NAMES[declared] ?? ["value_error", `Input should be ${declared}`];
      // A union such as [string, integer, boolean] names every branch rather than the first one only.
      if (allowed.length > 1)
        return issue(type, `Input should be a valid ${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}`);
      return issue(type, msg);
    }
    case "minLength":
      return issue("string_too_short", `String should have at least ${plural(bound ?? 0, "character")}`, {
        min_length: bound,
      });
    case "maxLength":
      return issue("string_too_long", `String should have at most ${plural(bound ?? 0, "character")}`, {
        max_length: bound,
      });
    case "exclusiveMinimum":
      return issue("greater_than", `Input should be greater than ${bound}`, { gt: bound });
    case "minimum":
      return issue("greater_than_equal", `Input should be greater than or equal to ${bound}`, { ge: bound });
    case "exclusiveMaximum":
      return issue("less_than", `Input should be less than ${bound}`, { lt: bound });
    case "maximum":
      return issue("less_than_equal", `Input should be less than or equal to ${bound}`, { le: bound });
    case "minItems": {
      const actual = Array.isArray(value) ? value.length : 0;
      return issue(
        "too_short",
        `List should have at least ${plural(bound ?? 0, "item")} after validation, not ${actual}`,
        { field_type: "List", min_length: bound, actual_length: actual },
      );
    }
    case "maxItems": {
      const actual = Array.isArray(value) ? value.length : 0;
      return issue(
        "too_long",
        `List should have at most ${plural(bound ?? 0, "item")} after validation, not ${actual}`,
        { field_type: "List", max_length: bound, actual_length: actual },
      );
    }
    case "maxProperties":
    case "minProperties":
      return issue("value_error", `Value error, ${item.message}`, { error: item.message });
    case "format":
      if (/uuid/.test(item.message)) {
        return issue(
          "uuid_parsing",
          "Input should be a valid UUID, invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-]",
          { error: "invalid UUID" },
        );
      }
      return issue("value_error", `Value error, ${item.message}`, { error: item.message });
    case "enum": {
      const allowed = item.message.replace(/^.*allowed values:\s*/, "").split(/,\s*/);
      const expected =
        allowed.length > 1
          ? `${allowed
              .slice(0, -1)
              .map((a) => `'${a}'`)
              .join(", ")} or '${allowed.at(-1)}'`
          : `'${allowed[0]}'`;
      return issue("enum", `Input should be ${expected}`, { expected });
    }
    case "pattern": {
      const pattern = item.message.replace(/^must match pattern\s*"?/, "").replace(/"$/, "");
      return issue("string_pattern_mismatch", `String should match pattern '${pattern}'`, { pattern });
    }
    case "const":
      return issue("literal_error", `Input should be ${item.message.replace(/^must be equal to constant\s*/, "")}`);
    // A field the body's schema does not declare (`additionalProperties: false`): pydantic's extra="forbid".
    case "additionalProperties":
      return issue("extra_forbidden", "Extra inputs are not permitted");
    default:
      // A query parameter the operation does not declare (the validator's own check, without a keyword).
      if (/^Unknown query parameter/.test(item.message))
        return issue("extra_forbidden", "Extra inputs are not permitted");
      if (/Empty value found/.test(item.message)) return issue("missing", "Field required", undefined, false);
      return issue("value_error", `Value error, ${item.message}`, { error: item.message });
  }
}

/** One entry per failed rule; anyOf/oneOf wrappers that only summarise their branches are dropped. */
export function toValidationIssues(errors: ValidatorErrorItem[], req: Request): ValidationIssue[] {
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  for (const item of errors) {
    const keyword = (item.errorCode ?? "").replace(/\.openapi\.validation$/, "");
    if (keyword === "anyOf" || keyword === "oneOf" || keyword === "if") continue;
    const issue = toIssue(item, req);
    const key = JSON.stringify([issue.loc, issue.type]);
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

/** A parse failure of the JSON body, shaped like pydantic's json_invalid. */
export function jsonInvalidIssue(error: unknown, rawBody: string | undefined): ValidationIssue {
  const message = error instanceof Error ? error.message : "Invalid JSON";
  const position = /position (\d+)/.exec(message);
  return {
    loc: ["body", position ? Number(position[1]) : 0],
    msg: "JSON decode error",
    type: "json_invalid",
    input: {},
    ctx: {
      error:
        rawBody === undefined || rawBody.trim() === ""
          ? "Expecting value"
          : message.replace(/^Unexpected token.*?,\s*/, "").slice(0, 200),
    },
  };
}

function readOverride(value: unknown): ValidationOverride | undefined {
  if (!value || typeof value !== "object") return undefined;
  const candidate = value as Record<string, unknown>;
  if (typeof candidate.status !== "number") return undefined;
  const override: ValidationOverride = { status: candidate.status };
  if (typeof candidate.code === "string") override.code = candidate.code;
  if (typeof candidate.oauth_error === "string") override.oauth_error = candidate.oauth_error;
  return override;
}

interface OperationLike {
  parameters?: unknown[];
  requestBody?: unknown;
  [extension: string]: unknown;
}

export interface OverrideRules {
  /** For the whole operation. */
  operation?: ValidationOverride;
  /** Keyed by loc prefix, e.g. "header/idempotency-key" or "body/context_values". */
  prefixes: { prefix: (string | number)[]; override: ValidationOverride }[];
}

/** Reads the `x-validation-error` extensions an operation carries (on itself, its parameters and its body's top-level properties). */
export function overrideRules(operation: OperationLike, resolve: (value: unknown) => unknown): OverrideRules {
  const rules: OverrideRules = { prefixes: [] };
  const own = readOverride(operation["x-validation-error"]);
  if (own) rules.operation = own;
  for (const raw of operation.parameters ?? []) {
    const parameter = resolve(raw) as { name?: string; in?: string; "x-validation-error"?: unknown } | undefined;
    const override = readOverride(parameter?.["x-validation-error"]);
    if (parameter?.name && parameter.in && override) {
      const location = LOCATION[parameter.in === "header" ? "headers" : parameter.in] ?? parameter.in;
      rules.prefixes.push({
        prefix: [location, parameter.in === "header" ? parameter.name.toLowerCase() : parameter.name],
        override,
      });
    }
  }
  const body = resolve(operation.requestBody) as { content?: Record<string, { schema?: unknown }> } | undefined;
  for (const media of Object.values(body?.content ?? {})) {
    const schema = resolve(media.schema) as { properties?: Record<string, unknown> } | undefined;
    for (const [name, property] of Object.entries(schema?.properties ?? {})) {
      const override = readOverride((resolve(property) as Record<string, unknown> | undefined)?.["x-validation-error"]);
      if (override) rules.prefixes.push({ prefix: ["body", name], override });
    }
  }
  return rules;
}

/** The override that applies to these issues, if any: the operation's own, else the first matching prefix. */
export function findOverride(
  rules: OverrideRules | undefined,
  issues: ValidationIssue[],
): { override: ValidationOverride; issues: ValidationIssue[]; prefix?: (string | number)[] } | undefined {
  if (!rules) return undefined;
  if (rules.operation) return { override: rules.operation, issues };
  for (const { prefix, override } of rules.prefixes) {
    const matching = issues.filter((issue) =>
      prefix.every((segment, index) => String(issue.loc[index]).toLowerCase() === String(segment).toLowerCase()),
    );
    if (matching.length > 0) return { override, issues: matching, prefix };
  }
  return undefined;
}

/** For an override on a body property that is a map (e.g. context_values): the offending keys under it. */
export function offendingKeys(
  prefix: (string | number)[] | undefined,
  issues: ValidationIssue[],
): string[] | undefined {
  if (!prefix || prefix[0] !== "body" || prefix.length !== 2) return undefined;
  const keys = issues
    .map((issue) => issue.loc[prefix.length])
    .filter((key): key is string | number => key !== undefined);
  return [...new Set(keys.map(String))];
}

/** Thrown by domain code for rules the schema cannot express; answered exactly like a schema violation. */
export class RequestValidationError extends Error {
  override name = "RequestValidationError";
  readonly issues: ValidationIssue[];

  constructor(issues: ValidationIssue[]) {
    super(issues.map((issue) => `${issue.loc.join(".")}: ${issue.msg}`).join("; "));
    this.issues = issues;
  }
}

/** A pydantic-style value_error at loc, e.g. valueError(["body", "url"], "URL scheme must be https", url). */
export function valueError(loc: (string | number)[], message: string, input?: unknown): ValidationIssue {
  const issue: ValidationIssue = { loc, msg: `Value error, ${message}`, type: "value_error", ctx: { error: message } };
  if (input !== undefined) issue.input = input;
  return issue;
}

/**
 * What the schema allows but the service cannot keep, in one walk of the body:
 * - 422 finite_number (pydantic's type for inf and nan) for every number JSON.parse turned into ±Infinity
 *   (e.g. 1e400): it has no JSON form, so it could be neither stored, fingerprinted nor signed;
 * - 422 value_error for every integer literal beyond ±(2^53−1), which JSON.parse rounded (found in the
 *   body's JSON text, `jsonText`, when given);
 * - 422 value_error for every string or key PostgreSQL could not store (NUL, unpaired surrogates).
 */
export function unrepresentableBodyIssues(body: unknown, jsonText?: Uint8Array): ValidationIssue[] {
  const marked = jsonText === undefined ? undefined : parseMarkingInexactIntegers(jsonText);
  const { nonFiniteNumbers, inexactIntegers, unstorableText } = unrepresentablePaths(marked ?? body, ["body"]);
  return [
    ...nonFiniteNumbers.map((loc) => ({ loc, msg: "Input should be a finite number", type: "finite_number" })),
    ...inexactIntegers.map((loc) => valueError(loc, INEXACT_INTEGER_MESSAGE)),
    ...unstorableText.map((loc) => valueError(loc, UNSTORABLE_TEXT_MESSAGE)),
  ];
}

const UNSTORABLE_TEXT_MESSAGE = "text must not contain NUL characters or unpaired surrogates";

const INEXACT_INTEGER_MESSAGE =
  "integers must lie within ±(2^53−1) (9007199254740991) to be kept exactly; send larger ones as strings";

/** A parameter the document declares, by where it is read: ["query", "limit"] (header names in lower case). */
export type DeclaredParameter = [location: "query" | "path" | "header", name: string];
/** A parameter the document declares as an integer. */
export type IntegerParameter = DeclaredParameter;

/** The parameters among an operation's (and its path item's) whose schema passes `test`. */
function parametersWhere(
  parameters: unknown[],
  resolve: (value: unknown) => unknown,
  test: (schema: { type?: unknown; format?: unknown } | undefined) => boolean,
): DeclaredParameter[] {
  const found: DeclaredParameter[] = [];
  for (const raw of parameters) {
    const parameter = resolve(raw) as { name?: unknown; in?: unknown; schema?: unknown } | undefined;
    const schema = resolve(parameter?.schema) as { type?: unknown; format?: unknown } | undefined;
    if (typeof parameter?.name !== "string" || !test(schema)) continue;
    if (parameter.in === "query" || parameter.in === "path") found.push([parameter.in, parameter.name]);
    else if (parameter.in === "header") found.push(["header", parameter.name.toLowerCase()]);
  }
  return found;
}

/** The integer parameters among an operation's (and its path item's) parameters. */
export function integerParameters(parameters: unknown[], resolve: (value: unknown) => unknown): IntegerParameter[] {
  return parametersWhere(parameters, resolve, (schema) =>
    (Array.isArray(schema?.type) ? schema.type : [schema?.type]).includes("integer"),
  );
}

/** The date-time parameters (`format: date-time`) among an operation's (and its path item's) parameters. */
export function dateTimeParameters(parameters: unknown[], resolve: (value: unknown) => unknown): DeclaredParameter[] {
  return parametersWhere(parameters, resolve, (schema) => schema?.format === "date-time");
}

/** Every parameter an operation (and its path item) declares. */
export function declaredParameters(parameters: unknown[], resolve: (value: unknown) => unknown): DeclaredParameter[] {
  return parametersWhere(parameters, resolve, () => true);
}

const NOT_AN_INSTANT =
  "not an instant: an RFC 3339 date-time is expected (a day its month has, hours 00 to 23, an offset within ±23:59) from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z";

/**
 * The validator's date-time format checks the form only: February 30, year 0000, hour 25 or an offset of
 * +99:00 pass it, and PostgreSQL then refuses the statement. Every date-time parameter's text must name an
 * instant (db/timestamps.ts, instantOf): otherwise 422 value_error at ["query", name] (or path, header).
 */
export function dateTimeIssues(
  parameters: DeclaredParameter[],
  textOf: (location: DeclaredParameter[0], name: string) => unknown,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const [location, name] of parameters) {
    const text = textOf(location, name);
    // Absent parameters, and repeated ones (a list), are the schema validator's to judge.
    if (typeof text !== "string" || instantOf(text) !== undefined) continue;
    issues.push(valueError([location, name], NOT_AN_INSTANT, text));
  }
  return issues;
}

/**
 * Query parameters are compared with stored text, and PostgreSQL refuses text with a NUL in a statement
 * (an unpaired surrogate cannot arrive: the query parser decodes malformed UTF-8 as U+FFFD): 422
 * value_error at ["query", name] for each declared one that holds such text, as in a body.
 */
export function unstorableQueryIssues(
  query: Record<string, unknown>,
  declared: DeclaredParameter[],
): ValidationIssue[] {
  const read: Record<string, unknown> = {};
  for (const [location, name] of declared) if (location === "query" && name in query) read[name] = query[name];
  // A repeated parameter is a list: one issue for its name, however many of its values hold such text.
  const names = new Set(unrepresentablePaths(read, ["query"]).unstorableText.map((loc) => String(loc[1])));
  return [...names].map((name) => valueError(["query", name], UNSTORABLE_TEXT_MESSAGE));
}

/** A request without any body (http/declared-input.ts) where the document requires one. */
export function absentBodyIssue(): ValidationIssue {
  return { loc: ["body"], msg: "Field required", type: "missing" };
}

/** An optional sign and decimal digits: the only text an integer parameter may be. */
const INTEGER_TEXT = /^[+-]?[0-9]+$/;

/**
 * The schema validator coerces any text JavaScript reads as a whole number ("Infinity", "1e400", "1e2",
 * "0x10", " 7", "7.0") and passes Infinity through `maximum`; knex then drops a LIMIT of Infinity. Every
 * integer parameter's text is therefore checked here, for all operations, before the validator reads it:
 * anything but an optional sign and digits is 422 int_parsing at ["query", name] (or path, header).
 */
export function integerTextIssues(
  parameters: IntegerParameter[],
  textOf: (location: IntegerParameter[0], name: string) => unknown,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const [location, name] of parameters) {
    const text = textOf(location, name);
    // Absent parameters, and repeated ones (a list), are the schema validator's to judge.
    if (typeof text !== "string" || INTEGER_TEXT.test(text)) continue;
    issues.push({ loc: [location, name], msg: INT_PARSING.msg, type: INT_PARSING.type, input: text });
  }
  return issues;
}

/** A path parameter whose percent-encoding is malformed: a value_error at ["path", name], not a 404. */
export function undecodablePathIssue(name: string, text: string): ValidationIssue {
  return valueError(["path", name], "the path parameter is not valid percent-encoded UTF-8", text);
}

/** Issues found before the schema validator ran, with its own: one issue per place, the earlier ones first. */
export function mergeIssues(earlier: ValidationIssue[], later: ValidationIssue[]): ValidationIssue[] {
  const places = new Set(earlier.map((issue) => JSON.stringify(issue.loc)));
  return [...earlier, ...later.filter((issue) => !places.has(JSON.stringify(issue.loc)))];
}
