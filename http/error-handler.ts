// The one way out for every failure: ApiError and OAuthError as their documented bodies, schema violations
// as the FastAPI 422 list (or the envelope an operation's x-error-overrides asks for), body-parser and
// validator errors mapped to their codes, a lost database as 503 with Retry-After, and anything else as a
// 500 envelope (logged, never with a stack trace in the body).
import type { NextFunction, Request, Response } from "express";
import { isDatabaseUnavailable } from "../db/database.ts";
import { errorMessage } from "../foundation/error-message.ts";
import type { Logger } from "../foundation/logger.ts";
import { ApiError, envelope, OAuthError, sendApiError, sendOAuthError } from "./errors.ts";
import { operationOf, requestIdOf } from "./request-context.ts";
import { BODY_LIMIT, BODY_LIMIT_BYTES, parameterIssuesOf } from "./request-validation.ts";
import {
  findOverride,
  jsonInvalidIssue,
  mergeIssues,
  offendingKeys,
  RequestValidationError,
  toValidationIssues,
  type ValidationIssue,
} from "./validation.ts";

/**
 * What a 503 for a lost database asks a client to wait. The service has no back-off of its own: every request
 * takes a new connection once the pooled ones are gone, so the first request after PostgreSQL accepts
 * connections again is served (test/http/database-unavailable.test.ts), and a PostgreSQL restart takes about
 * a second. Two seconds lets a restart finish without having clients hammer a database that is down.
 */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

export type ErrorReport = (error: unknown, req: Request) => void;

/** The default report of an unexpected error: one error-level line with the request's id and operation. */
export function logUnexpectedError(logger: Logger, error: unknown, req: Request): void {
  logger.error(
    {
      err: error,
      request_id: req.res?.locals.requestId,
      operationId: req.res ? operationOf(req.res)?.operationId : undefined,
    },
    "unexpected error",
  );
}

export function errorHandler(logger: Logger, logError: ErrorReport) {
  return (error: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(error);
    // Refused before its body was read (too large, rate-limited, unauthenticated): close the connection
    // rather than keep it alive, which would make Node read and discard the rest of the body first.
    if (!req.complete) res.setHeader("Connection", "close");
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
      res.status(500).json(envelope("INTERNAL_ERROR", "Internal error", requestIdOf(res)));
    }
  };
}

interface HttpErrorLike {
  status: number;
  message?: string;
  errors?: { path: string; message: string; errorCode?: string }[];
  headers?: Record<string, string>;
  type?: string;
  body?: unknown;
  /** body-parser's limit in bytes, on entity.too.large. */
  limit?: number;
}

function isHttpError(error: unknown): error is HttpErrorLike {
  return typeof error === "object" && error !== null && typeof (error as { status?: unknown }).status === "number";
}

function sendIssues(req: Request, res: Response, issues: ValidationIssue[]): void {
  const match = findOverride(operationOf(res)?.overrides, issues);
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
    .json(envelope(override.code ?? "VALIDATION_FAILED", describe(match.issues), requestIdOf(res), details));
}

function describe(issues: ValidationIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${issue.loc.join(".")}: ${issue.msg}`)
    .join("; ");
}

function respondWithError(error: unknown, req: Request, res: Response, logError: ErrorReport): void {
  if (error instanceof ApiError) return sendApiError(res, error);
  if (error instanceof OAuthError) return sendOAuthError(res, error);
  if (error instanceof RequestValidationError) return sendIssues(req, res, error.issues);
  if (isHttpError(error)) {
    // body-parser failures carry a `type`; express-openapi-validator's carry `errors`.
    switch (error.type) {
      case "entity.parse.failed":
        return sendIssues(req, res, [jsonInvalidIssue(error, typeof error.body === "string" ? error.body : undefined)]);
      case "entity.too.large":
        return sendApiError(
          res,
          new ApiError(
            "PAYLOAD_TOO_LARGE",
            error.limit === undefined || error.limit === BODY_LIMIT_BYTES
              ? `The request body exceeds the ${BODY_LIMIT} limit`
              : `The request body exceeds this operation's limit of ${error.limit} bytes`,
          ),
        );
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
