// Bearer authentication for protected operations: the token is read from the Authorization header only,
// jose (through the TokenService) verifies it, and the roles rule of the contract is applied.
import type { NextFunction, Request, Response } from "express";
import { ApiError } from "./errors.ts";
import { permits, TokenRejected, type Principal, type TokenService } from "../auth/tokens.ts";

const CHALLENGE = 'Bearer realm="integrator-api"';

declare module "express-serve-static-core" {
  interface Request {
    /** The verified principal of a protected operation's request (set here, read by dispatch and the limits). */
    user?: Principal;
  }
}

/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or undefined. Only the header:
 * RFC 6750's `access_token` query parameter lands in proxy and access logs and browser history, and a body
 * field would make any JSON body a credential carrier (passport-http-bearer accepted both).
 */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(authorization ?? "")?.[1];
}

/** Authenticates the request and enforces the role rule; answers 401/403 envelopes itself. */
export function requireBearer(
  tokens: TokenService,
  /** Whether the request's operation declares the PortalSession scheme (accepts a portal credential). */
  acceptsPortal: (req: Request) => boolean = () => false,
): (req: Request, res: Response, next: NextFunction) => void {
  const refuse = (req: Request, next: NextFunction) => {
    const presented = /^bearer\s+\S/i.test(req.headers.authorization ?? "");
    const challenge = presented ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE;
    next(
      new ApiError(
        "UNAUTHORIZED",
        presented ? "The bearer token is invalid or expired" : "A bearer token is required",
        {
          headers: { "WWW-Authenticate": challenge },
        },
      ),
    );
  };
  const admit = (principal: Principal, res: Response, req: Request, next: NextFunction) => {
    if (!permits(principal)) {
      // Not req.user: nothing downstream may act for it; the rate limits count its failures by principal.
      res.locals.forbiddenPrincipal = principal;
      return next(
        new ApiError(
          "FORBIDDEN",
          "The token's roles do not allow this operation (client_admin or platform_admin required)",
        ),
      );
    }
    req.user = principal;
    next();
  };
  return (req, res, next) => {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) return refuse(req, next);
    tokens.verify(token, { allowPortal: acceptsPortal(req) }).then(
      (principal) => admit(principal, res, req, next),
      (error: unknown) => (error instanceof TokenRejected ? refuse(req, next) : next(error)),
    );
  };
}
