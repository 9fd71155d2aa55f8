// What the document says of a request's input that the schema validator does not hold it to, checked once
// the body is read and before the validator runs (http/app.ts):
// - a request with no body at all (neither Content-Length nor Transfer-Encoding, as `curl -X PATCH -H
//   'Content-Type: application/json'` sends it; or an empty one without a Content-Type, as fetch sends a
//   POST without a body) where the operation requires one is 422 `missing` at ["body"] (the validator
//   requires a body only when its schema lists required properties, and would call the second 415);
// - a body sent to an operation that declares none is not read (so not judged either);
// - a date-time parameter must name an instant, and a query parameter must hold text PostgreSQL can
//   store, or 422 `value_error` at its loc (http/validation.ts).
// Each answers like a schema violation, or as the operation's x-validation-error says.
import type { NextFunction, Request, Response } from "express";
import { operationOf, routeOf } from "./request-context.ts";
import {
  absentBodyIssue,
  dateTimeIssues,
  mergeIssues,
  RequestValidationError,
  unstorableQueryIssues,
} from "./validation.ts";

/**
 * Whether the request carries a body, even an empty one (RFC 9112 §6.3). An empty one without a
 * Content-Type is none: it is what fetch and most HTTP clients send for a POST without a body.
 */
function sentBody(req: Request): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return true;
  const length = req.headers["content-length"];
  if (length === undefined) return false;
  return Number(length) > 0 || req.headers["content-type"] !== undefined;
}

export function declaredInput() {
  return (req: Request, res: Response, next: NextFunction): void => {
    const operation = operationOf(res);
    const route = routeOf(res);
    if (!operation || !route) return next();
    if (operation.body === "none") req.body = undefined;
    else if (operation.body === "required" && !sentBody(req))
      return next(new RequestValidationError([absentBodyIssue()]));
    const query = req.query as Record<string, unknown>;
    const issues = mergeIssues(
      dateTimeIssues(operation.dateTimeParameters, (location, name) =>
        location === "query" ? query[name] : location === "path" ? route.params[name] : req.headers[name],
      ),
      unstorableQueryIssues(query, operation.parameters),
    );
    next(issues.length > 0 ? new RequestValidationError(issues) : undefined);
  };
}
