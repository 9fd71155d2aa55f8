// The HTTP application: request ids, a log line and a duration metric per request, load shedding, rate
// limits around bearer auth for protected operations, body parsing, request (and in tests response)
// validation by express-openapi-validator, and dispatch by operationId through openapi-backend. Every
// failure leaves through one error handler as a documented shape.
import { randomUUID } from "node:crypto";
// eslint-disable-next-line no-restricted-imports -- the one call, see settleLegacyUrlParseDeprecation
import { parse as parseLegacyUrl } from "node:url";
import express, { type NextFunction, type Request, type Response } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import { OpenAPIBackend, type Context } from "openapi-backend";
import type { OpenAPIV3_1 } from "openapi-types";
import { requireBearer } from "./authentication.ts";
import { isDatabaseUnavailable } from "../../db/database.ts";
import { ApiError, envelope, OAuthError, sendApiError, sendOAuthError } from "./errors.ts";
import type { Call, HandlerTable, OperationId } from "./operations.ts";
import { loadDocument, resolveRef } from "./openapi-document.ts";
import { compileRoutes, type RouteMatch } from "./routes.ts";
import { poolStatistics } from "../../db/database.ts";
import { loadShedding } from "./load-shedding.ts";
import { portalPage } from "./portal-page.ts";
import { apiDocsRouter } from "./api-docs.ts";
import { cors } from "./cors.ts";
import { requestLogger, type Logger } from "../logger.ts";
import { observeRequest } from "../metrics.ts";
import { createRateLimits, type OpenRoute } from "./rate-limit.ts";
import { securityHeaders } from "./security-headers.ts";
import type { Services } from "../services.ts";
import {
  findOverride,
  integerParameters,
  integerTextIssues,
  jsonInvalidIssue,
  mergeIssues,
  offendingKeys,
  overrideRules,
  RequestValidationError,
  toValidationIssues,
  unrepresentableBodyIssues,
  undecodablePathIssue,
  type IntegerParameter,
  type OverrideRules,
  type ValidationIssue,
} from "./validation.ts";
import { errorMessage } from "../error-message.ts";

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
const BODY_LIMIT = "1mb";

interface ResolvedOperation {
  operationId: string;
  secured: boolean;
  /** Declares the PortalSession scheme: a webhook portal credential is accepted too. */
  portal: boolean;
  /** The health probes (tag health): never shed, rate-limited in a bucket of their own. */
  probe: boolean;
  overrides: OverrideRules;
  /** Checked as text before the schema validator coerces them (integerTextIssues). */
  integerParameters: IntegerParameter[];
}

export interface AppOptions {
  /** handlers/index.ts passes the complete table; tests may pass part of one (the rest answer 501). */
  handlers: Partial<HandlerTable>;
  /** Reports unexpected errors (never sent to the client); by default they are logged at error level. */
  logError?: (error: unknown, req: Request) => void;
}

/** The default report of an unexpected error: one error-level line with the request's id and operation. */
export function logUnexpectedError(logger: Logger, error: unknown, req: Request): void {
  const operation = req.res?.locals.operation as ResolvedOperation | undefined;
  logger.error(
    { err: error, request_id: req.res?.locals.requestId, operationId: operation?.operationId },
    "unexpected error",
  );
}

export async function createApp(services: Services, options: AppOptions): Promise<express.Express> {
  const document = loadDocument();
  const backend = new OpenAPIBackend({
    definition: loadDocument() as never,
    validate: false,
    quick: true,
    ignoreTrailingSlashes: false,
  });
  const logger = services.logger;
  const logError = options.logError ?? ((error: unknown, req: Request) => logUnexpectedError(logger, error, req));

  const globalSecurity = document.security ?? [];
  const resolved = new Map<string, ResolvedOperation>();
  for (const [, pathItem] of Object.entries(document.paths ?? {})) {
    for (const method of ["get", "put", "post", "delete", "patch", "head", "options"] as const) {
      const operation = (pathItem as OpenAPIV3_1.PathItemObject)[method];
      if (!operation?.operationId) continue;
      const security = operation.security ?? globalSecurity;
      resolved.set(operation.operationId, {
        operationId: operation.operationId,
        secured: security.some((requirement) => Object.keys(requirement).length > 0),
        portal: security.some((requirement) => "PortalSession" in requirement),
        probe: (operation.tags ?? []).includes("health"),
        overrides: overrideRules(operation, (value) => resolveRef(document, value)),
        integerParameters: integerParameters(
          [...((pathItem as OpenAPIV3_1.PathItemObject).parameters ?? []), ...(operation.parameters ?? [])],
          (value) => resolveRef(document, value),
        ),
      });
    }
  }

  const handlerMap: Record<string, (context: Context, req: Request, res: Response) => Promise<void>> = {};
  for (const [operationId, handler] of Object.entries(options.handlers)) {
    handlerMap[operationId] = async (context, req, res) => {
      const call: Call<OperationId> = {
        operationId: operationId as OperationId,
        body: req.body as never,
        query: req.query,
        params: (context.request.params ?? {}) as never,
        headers: req.headers,
        principal: req.user,
        requestId: String(res.locals.requestId),
        clientAddress: req.ip ?? req.socket.remoteAddress ?? "",
        services,
      };
      const reply = await (
        handler as (
          call: Call<OperationId>,
        ) => Promise<{ status: number; body?: unknown; headers?: Record<string, string>; rawJson?: string }>
      )(call);
      for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
      if (reply.rawJson !== undefined)
        res.status(reply.status).type("application/json; charset=utf-8").send(reply.rawJson);
      else if (reply.body === undefined) res.status(reply.status).end();
      else res.status(reply.status).json(reply.body);
    };
  }
  backend.register({
    ...handlerMap,
    notImplemented: async (context: Context) => {
      throw new ApiError(
        "NOT_IMPLEMENTED",
        `${context.operation.operationId ?? "This operation"} is not implemented yet`,
        { status: 501 },
      );
    },
    notFound: async () => {
      throw new ApiError("NOT_FOUND", "No such route");
    },
  });
  backend.register("unauthorizedHandler", async () => {
    throw new ApiError("UNAUTHORIZED", "A bearer token is required", {
      headers: { "WWW-Authenticate": 'Bearer realm="integrator-api"' },
    });
  });
  await backend.init();
  const routes = compileRoutes(document);

  const app = express();
  app.disable("x-powered-by");
  // The contract documents no ETag and no 304 (answers change with every write); hashing each body for
  // one was a visible share of a request's CPU time.
  app.set("etag", false);
  app.set("query parser", "simple");
  app.set("trust proxy", services.config.trustProxy);

  // Security headers and the request id first, so that every answer, errors included, carries them.
  app.use(securityHeaders());
  app.use((req, res, next) => {
    const offered = req.headers["x-request-id"];
    const requestId = typeof offered === "string" && SAFE_REQUEST_ID.test(offered) ? offered : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader("X-Request-Id", requestId);
    // The request's one route match; the validator's metadata and the dispatch below reuse it.
    const route = routes.match(req.method, req.path);
    if (route) {
      res.locals.route = route;
      res.locals.operation = resolved.get(route.operationId);
    }
    next();
  });

  // CORS next: a preflight from an allowed origin is answered before anything else can refuse it.
  app.use(cors(services.config.corsAllowedOrigins));

  const operationOf = (res: Response) => res.locals.operation as ResolvedOperation | undefined;
  const isProbe = (res: Response) => operationOf(res)?.probe === true;

  // pino-http binds a child logger to every request, redaction included, even when nothing is written.
  if (logger.level !== "silent") {
    app.use(
      requestLogger<Request, Response>(logger, {
        requestId: (res) => String(res.locals.requestId),
        operationId: (res) => operationOf(res)?.operationId,
        tenant: (req) => req.user?.tenantId,
        isProbe,
      }),
    );
  }

  app.use((req, res, next) => {
    const started = performance.now();
    let observed = false;
    const observe = () => {
      if (observed) return;
      observed = true;
      observeRequest(
        operationOf(res)?.operationId ?? "unmatched",
        req.method,
        res.writableFinished ? res.statusCode : "aborted",
        (performance.now() - started) / 1000,
      );
    };
    res.once("finish", observe);
    res.once("close", observe);
    next();
  });

  // Shed load before anything else costs time or a database connection.
  app.use(
    loadShedding(
      {
        ...services.config.loadShedding,
        pendingAcquires: () => poolStatistics(services.db)?.pendingAcquires ?? 0,
      },
      isProbe,
    ),
  );

  // Authentication runs before the body is read or validated: without a valid token nothing is said about
  // the body. Rate limits sit around it: per principal once it is known, per address otherwise.
  const rateLimits = createRateLimits(services, logger);
  const limitOpen = rateLimits.open((res): OpenRoute => {
    const operation = operationOf(res);
    if (!operation) return "unmatched";
    if (operation.probe) return "probe";
    if (operation.operationId === "issueToken") return "token";
    if (operation.operationId === "receivePartnerCallback") return "callback";
    return "address";
  });
  const authenticate = rateLimits.protect(
    requireBearer(services.tokens, (req) => operationOf(req.res as Response)?.portal === true),
  );
  app.use((req, res, next) => {
    if (operationOf(res)?.secured) authenticate(req, res, next);
    else limitOpen(req, res, next);
  });

  // The webhook portal page: static files, outside the API document (its API calls are ordinary operations).
  app.use(portalPage(services.config.portal.frameAncestors));
  // The description and its reference page are no operations of the document: served before validation.
  if (services.config.serveApiDocs) app.use(apiDocsRouter());

  app.use(
    express.json({
      limit: BODY_LIMIT,
      strict: false,
      type: ["application/json", "application/*+json"],
      // The text is kept (a reference, no copy) for what JSON.parse loses: integers beyond 2^53 (json-limits).
      verify: (_req, res, text) => {
        (res as Response).locals.jsonText = text;
      },
    }),
  );
  app.use(express.urlencoded({ limit: "64kb", extended: false, type: "application/x-www-form-urlencoded" }));

  // Parameters are judged as text first. A path parameter that is no valid percent-encoding is refused at
  // once (the validator cannot even decode the URL; it reported the whole path under "body"). Integer
  // parameters are checked because the validator would coerce "Infinity" or "1e2": what is found is answered
  // with the validator's own findings (respondWithError) or after it passes.
  app.use((req, res, next) => {
    const operation = operationOf(res);
    const route = res.locals.route as RouteMatch | undefined;
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
  });

  settleLegacyUrlParseDeprecation();
  app.use(
    reuseRouteMatch(
      OpenApiValidator.middleware({
        apiSpec: document as never,
        validateRequests: { allErrors: true, allowUnknownQueryParameters: true },
        validateResponses: services.config.validateResponses ? { allErrors: true } : false,
        validateSecurity: false,
        // Redocly lints the document; the validator's own 3.1 meta-schema check rejects the relative tokenUrl the spec requires.
        validateApiSpec: false,
        validateFormats: true,
        ignoreUndocumented: false,
      }),
    ),
  );

  // What the schema allows but PostgreSQL cannot store (or JSON cannot write: numbers that overflowed to
  // ±Infinity), and integer parameters whose text is no integer, are refused like a schema violation,
  // before any handler runs.
  app.use((req, res, next) => {
    const issues = [
      ...parameterIssuesOf(res),
      ...(req.body === undefined ? [] : unrepresentableBodyIssues(req.body, res.locals.jsonText as Buffer | undefined)),
    ];
    next(issues.length > 0 ? new RequestValidationError(issues) : undefined);
  });

  // Dispatch through openapi-backend's handler table by the operation already matched (handleRequest
  // would match the route again). The validator has answered 404/405 for anything unmatched.
  app.use((req, res, next) => {
    const route = res.locals.route as RouteMatch | undefined;
    const operation = operationOf(res);
    const run = async (): Promise<void> => {
      if (!route || !operation) throw new ApiError("NOT_FOUND", "No such route");
      // Second gate behind requireBearer: a protected operation never runs without a principal.
      if (operation.secured && !req.user) {
        await backend.handlers.unauthorizedHandler?.(contextOf(route), req, res);
        return;
      }
      const handler = backend.handlers[route.operationId] ?? backend.handlers.notImplemented;
      await handler?.(contextOf(route), req, res);
    };
    run().catch(next);
  });

  app.use((error: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    // Losing the database is the service's state, not a fault of the request or the code: 503, retry later.
    if (!(error instanceof ApiError) && isDatabaseUnavailable(error)) {
      logger.warn({ request_id: res.locals.requestId, reason: errorMessage(error) }, "database unavailable");
      return sendApiError(
        res,
        new ApiError("SERVICE_UNAVAILABLE", "The service cannot reach its database; retry later", {
          headers: { "Retry-After": String(DATABASE_RETRY_AFTER_SECONDS) },
        }),
      );
    }
    try {
      respondWithError(error, req, res, logError);
    } catch (secondary) {
      logError(secondary, req);
      res.status(500).json(envelope("INTERNAL_ERROR", "Internal error", String(res.locals.requestId ?? "")));
    }
  });

  return app;
}

/** What a handler of the table reads of openapi-backend's context: the operation and the path parameters. */
function contextOf(route: RouteMatch): Context {
  return {
    operation: { operationId: route.operationId },
    request: { params: route.params },
  } as unknown as Context;
}

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * express-openapi-validator parses every request's URL with Node's legacy `url.parse()`. Until Node has
 * reported that function's deprecation (DEP0169) once, each call walks the stack for a caller outside
 * node_modules, and a caller inside node_modules never gets it reported: 7.5 µs a call instead of 0.6,
 * 3–4 % of a submit's Node CPU (BENCHMARKS.md, ninth session). One call from here, with deprecation
 * warnings silenced for its duration only, reports it; the service itself never calls `url.parse()`.
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

/**
 * express-openapi-validator's middleware with its route lookup (which compiles every path of the document
 * on every request) done once per route: the first request of a route runs the validator's own
 * metadata middleware and its result is kept; later requests of that route get the kept result with
 * their own path parameters from the request's one match. Anything unmatched goes to the validator as is.
 */
function reuseRouteMatch(middleware: unknown[]): Middleware[] {
  const kept = new Map<string, Record<string, unknown>>();
  return (middleware as Middleware[]).map((step) => {
    if (step.name !== "metadataMiddleware") return step;
    return (req, res, next) => {
      const route = res.locals.route as RouteMatch | undefined;
      const key = route && `${req.method} ${route.template}`;
      const known = key === undefined ? undefined : kept.get(key);
      const request = req as Request & { openapi?: Record<string, unknown> };
      if (route && known) {
        request.openapi = { ...known, pathParams: route.params };
        req.params = route.params;
        return next();
      }
      step(req, res, (error?: unknown) => {
        if (key !== undefined && error === undefined && request.openapi) kept.set(key, { ...request.openapi });
        next(error);
      });
    };
  });
}

interface HttpErrorLike {
  status: number;
  message?: string;
  errors?: { path: string; message: string; errorCode?: string }[];
  headers?: Record<string, string>;
  type?: string;
  body?: unknown;
}

/** What the integer-text check found before the schema validator ran. */
function parameterIssuesOf(res: Response): ValidationIssue[] {
  return (res.locals.parameterIssues as ValidationIssue[] | undefined) ?? [];
}

function isHttpError(error: unknown): error is HttpErrorLike {
  return typeof error === "object" && error !== null && typeof (error as { status?: unknown }).status === "number";
}

function sendIssues(req: Request, res: Response, issues: ValidationIssue[]): void {
  const operation = res.locals.operation as ResolvedOperation | undefined;
  const match = findOverride(operation?.overrides, issues);
  if (!match) {
    res.status(422).json({ detail: issues });
    return;
  }
  const { override } = match;
  if (override.oauth_error) {
    res.setHeader("Cache-Control", "no-store");
    res.status(override.status).json({ error: override.oauth_error, error_description: describe(match.issues) });
    return;
  }
  const keys = offendingKeys(match.prefix, match.issues);
  const details: Record<string, unknown> =
    keys === undefined ? { errors: match.issues } : { keys, errors: match.issues };
  res
    .status(override.status)
    .json(
      envelope(override.code ?? "VALIDATION_FAILED", describe(match.issues), String(res.locals.requestId), details),
    );
}

function describe(issues: ValidationIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${issue.loc.join(".")}: ${issue.msg}`)
    .join("; ");
}

function respondWithError(
  error: unknown,
  req: Request,
  res: Response,
  logError: (error: unknown, req: Request) => void,
): void {
  if (error instanceof ApiError) return sendApiError(res, error);
  if (error instanceof OAuthError) return sendOAuthError(res, error);
  if (error instanceof RequestValidationError) return sendIssues(req, res, error.issues);
  if (isHttpError(error)) {
    // body-parser failures carry a `type`; express-openapi-validator's carry `errors`.
    switch (error.type) {
      case "entity.parse.failed":
        return sendIssues(req, res, [jsonInvalidIssue(error, typeof error.body === "string" ? error.body : undefined)]);
      case "entity.too.large":
        return sendApiError(res, new ApiError("PAYLOAD_TOO_LARGE", `The request body exceeds the ${BODY_LIMIT} limit`));
      case "encoding.unsupported":
      case "charset.unsupported":
        return sendApiError(res, new ApiError("UNSUPPORTED_MEDIA_TYPE", error.message ?? "Unsupported encoding"));
      default:
        break;
    }
    switch (error.status) {
      case 400:
        return sendIssues(
          req,
          res,
          mergeIssues(
            parameterIssuesOf(res),
            toValidationIssues(error.errors ?? [{ path: "/body", message: error.message ?? "invalid request" }], req),
          ),
        );
      case 404:
        return sendApiError(res, new ApiError("NOT_FOUND", "No such route"));
      case 405:
        return sendApiError(
          res,
          new ApiError(
            "METHOD_NOT_ALLOWED",
            `Method ${req.method} is not allowed here`,
            error.headers?.Allow ? { headers: { Allow: error.headers.Allow } } : {},
          ),
        );
      case 413:
        return sendApiError(res, new ApiError("PAYLOAD_TOO_LARGE", "The request body is too large"));
      case 415:
        return sendApiError(
          res,
          new ApiError(
            "UNSUPPORTED_MEDIA_TYPE",
            `Unsupported content type ${JSON.stringify(req.headers["content-type"] ?? "none")}: send the media type the operation declares`,
          ),
        );
      default:
        break;
    }
  }
  logError(error, req);
  sendApiError(res, new ApiError("INTERNAL_ERROR", "Internal error"));
}

const DATABASE_RETRY_AFTER_SECONDS = 30;
