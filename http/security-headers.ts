// The headers every response of a JSON API conventionally carries, set in one place before anything
// else can answer (errors, 404s and 429s included):
// - X-Content-Type-Options: nosniff: a browser never guesses another type than the one declared;
// - Content-Security-Policy: default-src 'none'; frame-ancestors 'none': a JSON answer loads nothing and
//   is never framed; X-Frame-Options: DENY says the same to older browsers;
// - Referrer-Policy: no-referrer: links followed from a response leak no URL (ids, query strings);
// - Cache-Control: no-store: answers are per caller; an operation that may be cached (the JWKS) sets its own.
// They are set first and plain res.setHeader replaces them, so a route that serves a page (such as a
// documentation or portal page) sets its own Content-Security-Policy and framing policy in its handler,
// or lists its own values here through `overrides`.
import type { NextFunction, Request, Response } from "express";

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "X-Content-Type-Options": "nosniff",
  "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
};

/** A path prefix whose responses get other values for some of the headers (e.g. an HTML page's CSP). */
export interface SecurityHeaderOverride {
  pathPrefix: string;
  headers: Record<string, string | undefined>;
}

export function securityHeaders(
  overrides: SecurityHeaderOverride[] = [],
): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    for (const override of overrides) {
      if (!req.path.startsWith(override.pathPrefix)) continue;
      for (const [name, value] of Object.entries(override.headers)) {
        if (value === undefined) res.removeHeader(name);
        else res.setHeader(name, value);
      }
    }
    next();
  };
}
