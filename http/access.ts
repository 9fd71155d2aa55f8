// Who may go on: authentication runs before the body is read or validated (without a valid token nothing
// is said about the body), and rate limits sit around it: per principal once it is known, per client
// address otherwise, with the probes, the token endpoint and partner callbacks in buckets of their own;
// partner callbacks are also capped in flight per address (CALLBACK_CONCURRENCY_PER_ADDRESS).
import type { NextFunction, Request, Response } from "express";
import type { Services } from "../foundation/services.ts";
import { requireBearer } from "./authentication.ts";
import { inFlightPerAddress } from "./in-flight.ts";
import type { OpenRoute, RateLimits } from "./rate-limit.ts";
import { operationOf } from "./request-context.ts";

export function access(services: Services, rateLimits: RateLimits) {
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
  const callbackSlot = inFlightPerAddress(services.config.callbacks.concurrencyPerAddress, "callback_concurrency");
  return (req: Request, res: Response, next: NextFunction): void => {
    const operation = operationOf(res);
    if (operation?.secured) authenticate(req, res, next);
    else if (operation?.operationId === "receivePartnerCallback")
      limitOpen(req, res, (error?: unknown) => (error ? next(error) : callbackSlot(req, res, next)));
    else limitOpen(req, res, next);
  };
}
