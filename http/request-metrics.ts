// One duration observation per request, by operationId, method and status ("aborted" when the client
// went away first), taken when the answer finished or the connection closed, whichever comes first.
import type { NextFunction, Request, Response } from "express";
import { observeRequest } from "../foundation/metrics.ts";
import { operationOf } from "./request-context.ts";

export function requestMetrics() {
  return (req: Request, res: Response, next: NextFunction): void => {
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
  };
}
