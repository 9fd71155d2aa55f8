// The HTTP application: one named step after another, each in a module of its own. Every failure leaves
// through the error handler as a documented shape; the path of a request is told in docs/architecture.md.
import express from "express";
import type { Request } from "express";
import { poolStatistics } from "../db/database.ts";
import { requestLogger } from "../foundation/logger.ts";
import type { Services } from "../foundation/services.ts";
import { access } from "./access.ts";
import { apiDocsRouter } from "./api-docs.ts";
import { cors } from "./cors.ts";
import { declaredInput } from "./declared-input.ts";
import { dispatch, operationBackend } from "./dispatch.ts";
import { errorHandler, logUnexpectedError, type ErrorReport } from "./error-handler.ts";
import { loadShedding, ShedLog } from "./load-shedding.ts";
import { loadDocument } from "./openapi-document.ts";
import type { HandlerTable } from "./operations.ts";
import { portalPage } from "./portal-page.ts";
import { createRateLimits } from "./rate-limit.ts";
import { isProbe, operationOf, requestContext, requestIdOf, resolveOperations } from "./request-context.ts";
import { requestMetrics } from "./request-metrics.ts";
import { requestSpan } from "./request-span.ts";
import { bodyParsing, requestValidation } from "./request-validation.ts";
import { pipeline } from "./pipeline.ts";
import { securityHeaders } from "./security-headers.ts";
import { tracingIsOn } from "../foundation/tracing.ts";

export { logUnexpectedError } from "./error-handler.ts";

export interface AppOptions {
  /** handlers/index.ts passes the complete table; tests may pass part of one (the rest answer 501). */
  handlers: Partial<HandlerTable>;
  /** Reports unexpected errors (never sent to the client); by default they are logged at error level. */
  logError?: ErrorReport;
}

export async function createApp(services: Services, options: AppOptions): Promise<express.Express> {
  const { config, logger } = services;
  const document = loadDocument();
  const operations = resolveOperations(document);
  const backend = await operationBackend(options.handlers, services);
  const logError = options.logError ?? ((error: unknown, req: Request) => logUnexpectedError(logger, error, req));

  const app = express();
  app.disable("x-powered-by");
  // The contract documents no ETag and no 304 (answers change with every write); hashing each body for
  // one was a visible share of a request's CPU time.
  app.set("etag", false);
  app.set("query parser", "simple");
  app.set("trust proxy", config.trustProxy);

  // One set of rate-limit counters for the whole pipeline: preflights spend their address's open-route allowance.
  const rateLimits = createRateLimits(services, logger);
  // One log of shed requests for the load-shedding step and the body memory bound.
  const shedLog = new ShedLog(logger);
  const pages = [portalPage(config.portal.frameAncestors)];
  if (config.serveApiDocs) pages.push(apiDocsRouter({ redirectRoot: !config.isProduction }));
  app.use(
    pipeline([
      // Security headers and the request id first, so that every answer, errors included, carries them.
      securityHeaders(),
      requestContext(document, operations),
      // A preflight from an allowed origin is answered before anything but its address's rate limit can refuse it.
      cors(
        config.corsAllowedOrigins,
        rateLimits.open(() => "address"),
      ),
      // pino-http binds a child logger to every request, redaction included, even when nothing is written.
      logger.level === "silent"
        ? []
        : requestLogger<Request, express.Response>(logger, {
            requestId: requestIdOf,
            operationId: (res) => operationOf(res)?.operationId,
            tenant: (req) => req.user?.tenantId,
            isProbe,
          }),
      requestMetrics(),
      tracingIsOn() ? requestSpan() : [],
      // Shed load before anything else costs time or a database connection.
      loadShedding(
        { ...config.loadShedding, pendingAcquires: () => poolStatistics(services.db)?.pendingAcquires ?? 0 },
        isProbe,
        shedLog,
      ),
      access(services, rateLimits),
      // The portal page and the description are no operations of the document: served before validation,
      // and passed by when the request matched an operation.
      pages.map(
        (page): express.RequestHandler =>
          (req, res, next) =>
            operationOf(res) === undefined ? page(req, res, next) : next(),
      ),
      bodyParsing(config.callbacks.maxBodyBytes, config.bodyMemoryBytes, shedLog),
      declaredInput(),
      requestValidation(config.validateResponses),
      dispatch(backend),
    ]),
  );
  app.use(errorHandler(logger, logError));
  return app;
}
