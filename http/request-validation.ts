// Reading and checking the request against the document: the JSON (or form) body within its limit (and
// within what bodies the process may hold at once: http/body-memory.ts), then
// express-openapi-validator (every violation, not the first: the 422 lists them all, as FastAPI's does;
// unknown query parameters and body fields refused where the document says so; responses too where
// VALIDATE_RESPONSES is on), then what the schema allows but PostgreSQL cannot store
// or JSON cannot write (numbers that overflowed to ±Infinity), refused like a schema violation.
// eslint-disable-next-line no-restricted-imports -- the one call, see settleLegacyUrlParseDeprecation
import { parse as parseLegacyUrl } from "node:url";
import express, { type NextFunction, type Request, type Response } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import { documentPath } from "./openapi-document.ts";
import { operationOf, routeOf } from "./request-context.ts";
import { bodyMemory } from "./body-memory.ts";
import type { ShedLog } from "./load-shedding.ts";
import {
  integerTextIssues,
  RequestValidationError,
  undecodablePathIssue,
  unrepresentableBodyIssues,
  type ValidationIssue,
} from "./validation.ts";

export const BODY_LIMIT = "1mb";
export const BODY_LIMIT_BYTES = 1024 * 1024;

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

const JSON_TYPES = ["application/json", "application/*+json"];

/**
 * JSON bodies up to BODY_LIMIT, except partner callbacks (open to anyone) up to `callbackMaxBytes`; a
 * declared length over the limit is refused before the body is read, a streamed one as soon as it passes it.
 */
export function bodyParsing(callbackMaxBytes: number, bodyMemoryBytes: number, shedLog: ShedLog): Middleware[] {
  // The text is kept (a reference, no copy) for what JSON.parse loses: integers beyond 2^53 (json-limits).
  const keepText = (_req: unknown, res: unknown, text: Buffer) => {
    (res as Response).locals.jsonText = text;
  };
  const general = express.json({ limit: BODY_LIMIT, strict: false, type: JSON_TYPES, verify: keepText });
  const callback = express.json({ limit: callbackMaxBytes, strict: false, type: JSON_TYPES, verify: keepText });
  const isCallback = (res: Response) => operationOf(res)?.operationId === "receivePartnerCallback";
  const limitOf = (res: Response) => (isCallback(res) ? callbackMaxBytes : BODY_LIMIT_BYTES);
  return [
    (req, res, next) => {
      // body-parser reads a body it refuses to its end before it answers; a declared length over the
      // limit is refused before a byte is read (the error handler then closes the connection, not drains it).
      const limit = limitOf(res);
      if (Number(req.headers["content-length"] ?? 0) > limit) return next(tooLarge(limit));
      next();
    },
    bodyMemory(bodyMemoryBytes, limitOf, shedLog),
    (req, res, next) => (isCallback(res) ? callback : general)(req, res, next),
    express.urlencoded({ limit: "64kb", extended: false, type: "application/x-www-form-urlencoded" }),
  ];
}

/** The error body-parser gives for a body over its limit, for one refused on its declared length. */
function tooLarge(limit: number): Error {
  return Object.assign(new Error("request entity too large"), { status: 413, type: "entity.too.large", limit });
}

export function requestValidation(validateResponses: boolean): Middleware[] {
  settleLegacyUrlParseDeprecation();
  return [
    parameterText,
    ...documentValidator(validateResponses),
    // What the schema allows but PostgreSQL cannot store (or JSON cannot write: numbers that overflowed to
    // ±Infinity, integers beyond 2^53), and integer parameters whose text is no integer.
    (req, res, next) => {
      const issues = [
        ...parameterIssuesOf(res),
        ...(req.body === undefined
          ? []
          : unrepresentableBodyIssues(req.body, res.locals.jsonText as Buffer | undefined)),
      ];
      next(issues.length > 0 ? new RequestValidationError(issues) : undefined);
    },
  ];
}

/**
 * express-openapi-validator, one per process for each VALIDATE_RESPONSES value. It compiles an
 * operation's schemas on the operation's first request, each against the whole document; the apps of one
 * process (the test suite starts many) share what it compiled instead of compiling the same document again.
 */
const validators = new Map<boolean, Middleware[]>();

function documentValidator(validateResponses: boolean): Middleware[] {
  let validator = validators.get(validateResponses);
  if (validator === undefined) {
    validator = OpenApiValidator.middleware({
      apiSpec: documentPath,
      // An unknown query parameter is refused (422 extra_forbidden, mapped in validation.ts) unless the
      // operation says `x-eov-allow-unknown-query-parameters: true` in the document (partner callbacks,
      // the token endpoint). The validator reports the first unknown parameter alone, before the schema
      // checks, and with the check on it also refuses an empty value of a declared one (422 missing).
      validateRequests: { allErrors: true, allowUnknownQueryParameters: false },
      validateResponses: validateResponses ? { allErrors: true } : false,
      validateSecurity: false,
      // Redocly lints the document; the validator's own 3.1 meta-schema check rejects the document's relative tokenUrl (`token`).
      validateApiSpec: false,
      validateFormats: true,
      ignoreUndocumented: false,
    });
    validators.set(validateResponses, validator);
  }
  return validator;
}

/**
 * Parameters are judged as text first. A path parameter that is no valid percent-encoding is refused at
 * once (the validator cannot even decode the URL; it reported the whole path under "body"). Integer
 * parameters are checked because the validator would coerce "Infinity" or "1e2": what is found is answered
 * with the validator's own findings (errorHandler) or after it passes.
 */
const parameterText: Middleware = (req, res, next) => {
  const operation = operationOf(res);
  const route = routeOf(res);
  if (!operation || !route) return next();
  if (route.undecodable.length > 0) {
    const issues = route.undecodable.map((name) => undecodablePathIssue(name, route.params[name] ?? ""));
    return next(new RequestValidationError(issues));
  }
  if (operation.integerParameters.length === 0) return next();
  const issues = integerTextIssues(operation.integerParameters, (location, name) =>
    location === "query" ? req.query[name] : location === "path" ? route.params[name] : req.headers[name],
  );
  if (issues.length > 0) res.locals.parameterIssues = issues;
  next();
};

/** What the integer-text check found before the schema validator ran. */
export function parameterIssuesOf(res: Response): ValidationIssue[] {
  return (res.locals.parameterIssues as ValidationIssue[] | undefined) ?? [];
}

/**
 * express-openapi-validator parses every request's URL with Node's legacy `url.parse()`. Until Node has
 * reported that function's deprecation (DEP0169) once, each call walks the stack for a caller outside
 * node_modules, and a caller inside node_modules never gets it reported: 7.5 µs a call instead of 0.6,
 * 3–4 % of a submit's Node CPU (docs/performance.md, what bounds a submit). One call from here, with deprecation warnings
 * silenced for its duration only, reports it; the service itself never calls `url.parse()`.
 */
function settleLegacyUrlParseDeprecation(): void {
  const silenced = process.noDeprecation;
  process.noDeprecation = true;
  try {
    parseLegacyUrl("/");
  } finally {
    process.noDeprecation = silenced;
  }
}
