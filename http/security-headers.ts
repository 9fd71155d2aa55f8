// The headers every response of a JSON API conventionally carries (SECURITY_HEADERS, foundation/security-headers.ts
// says what each is for), set in one place before anything else can answer (errors, 404s and 429s
// included). They are set first and plain res.setHeader replaces them, so a route that serves a page (such
// as a documentation or portal page) sets its own Content-Security-Policy and framing policy in its handler,
// or lists its own values here through `overrides`.
import type { NextFunction, Request, Response } from "express";
import { SECURITY_HEADERS } from "../foundation/security-headers.ts";

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
