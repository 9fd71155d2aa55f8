// Requests in flight per client address, for the routes anyone can reach whose work is not bounded by a
// per-minute count alone (partner callbacks: a request per minute can still be slow to send and costly
// to check). A request holds its slot from its first byte until its answer is sent or its connection
// closes; one beyond the limit is 429 RATE_LIMITED with Retry-After at once, before its body is read.
import type { NextFunction, Request, Response } from "express";
import { recordRateLimited } from "../foundation/metrics.ts";
import { ApiError } from "./errors.ts";
import { addressKey } from "./rate-limit.ts";

const RETRY_AFTER_SECONDS = 1;

export function inFlightPerAddress(limit: number, scope: "callback_concurrency") {
  const inFlight = new Map<string, number>();
  return (req: Request, res: Response, next: NextFunction): void => {
    const key = addressKey(req.ip ?? req.socket.remoteAddress);
    const current = inFlight.get(key) ?? 0;
    if (current >= limit) {
      recordRateLimited(scope);
      return next(
        new ApiError(
          "RATE_LIMITED",
          `Too many requests in flight from this address; retry after ${RETRY_AFTER_SECONDS} s`,
          {
            headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
            details: { scope, limit },
          },
        ),
      );
    }
    inFlight.set(key, current + 1);
    // 'close' comes once, whether the answer was sent or the client went away first.
    res.once("close", () => {
      const left = (inFlight.get(key) ?? 1) - 1;
      if (left > 0) inFlight.set(key, left);
      else inFlight.delete(key);
    });
    next();
  };
}
