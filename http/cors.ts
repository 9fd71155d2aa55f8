// CORS for browser clients: only the origins of CORS_ALLOWED_ORIGINS (none by default) get CORS headers.
// A preflight from an allowed origin is answered 204 here, before load shedding and authentication, once it
// is counted against its client address's open-route rate limit (scope address), so preflights cannot be
// sent without limit; requests from other origins are served as usual without CORS headers, so the browser
// keeps their answers from the page. Tokens travel in Authorization, never in cookies: no credentials mode.
import type { NextFunction, Request, Response } from "express";

export const CORS_ALLOWED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
export const CORS_ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "X-Request-Id",
  "X-Correlation-Id",
  "X-Callback-Signature",
];
export const CORS_EXPOSED_HEADERS = [
  "X-Request-Id",
  "X-Correlation-Id",
  "Idempotent-Replayed",
  "Retry-After",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "WWW-Authenticate",
];
const PREFLIGHT_MAX_AGE_SECONDS = 600;

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/** `countPreflight` counts a preflight against its client address and passes on a 429 when it is over. */
export function cors(allowedOrigins: readonly string[], countPreflight: Middleware): Middleware {
  const allowed = new Set(allowedOrigins);
  return (req, res, next) => {
    if (allowed.size === 0) return next();
    res.vary("Origin");
    const origin = req.headers.origin;
    if (typeof origin !== "string" || !allowed.has(origin)) return next();
    res.setHeader("Access-Control-Allow-Origin", origin);
    if (req.method === "OPTIONS" && typeof req.headers["access-control-request-method"] === "string") {
      res.setHeader("Access-Control-Allow-Methods", CORS_ALLOWED_METHODS.join(", "));
      res.setHeader("Access-Control-Allow-Headers", CORS_ALLOWED_HEADERS.join(", "));
      res.setHeader("Access-Control-Max-Age", String(PREFLIGHT_MAX_AGE_SECONDS));
      countPreflight(req, res, (error?: unknown) => (error ? next(error) : res.status(204).end()));
      return;
    }
    res.setHeader("Access-Control-Expose-Headers", CORS_EXPOSED_HEADERS.join(", "));
    next();
  };
}
