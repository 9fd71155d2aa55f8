// Bearer authentication for protected operations: passport with passport-http-bearer's strategy takes the
// token from the Authorization header, jose (through the TokenService) verifies it, and the roles rule of
// the contract is applied.
import type { NextFunction, Request, Response } from "express";
import { Passport } from "passport";
import { Strategy as BearerStrategy } from "passport-http-bearer";
import { ApiError } from "./errors.ts";
import { permits, TokenRejected, type Principal, type TokenService } from "../foundation/auth/tokens.ts";

const CHALLENGE = 'Bearer realm="integrator-api"';

/** 401 for a bearer token that was presented but is not (or no longer) valid, its challenge saying so. */
export function invalidToken(message = "The bearer token is invalid or expired"): ApiError {
  return new ApiError("UNAUTHORIZED", message, {
    headers: { "WWW-Authenticate": `${CHALLENGE}, error="invalid_token"` },
  });
}

declare module "express-serve-static-core" {
  interface Request {
    /** The verified principal of a protected operation's request (set here, read by dispatch and the limits). */
    user?: Principal;
  }
}

/** Authenticates the request and enforces the role rule; answers 401/403 envelopes itself. */
export function requireBearer(
  tokens: Pick<TokenService, "verify">,
  /** Whether the request's operation declares the PortalSession scheme (accepts a portal credential). */
  acceptsPortal: (req: Request) => boolean = () => false,
): (req: Request, res: Response, next: NextFunction) => void {
  // An authenticator of its own rather than passport's shared one: every app has its own token service
  // (the tests start many apps in one process).
  const passport = new Passport();
  passport.use(
    new BearerStrategy((token: string, done: (error: unknown, user?: Principal | false, info?: string) => void) => {
      // Portal credentials too: whether this operation takes one is decided below, where the request is known.
      tokens.verify(token, { allowPortal: true }).then(
        (principal) => done(null, principal),
        (error: unknown) => (error instanceof TokenRejected ? done(null, false, "invalid_token") : done(error)),
      );
    }),
  );
  return (req, res, next) => {
    // passport-http-bearer reads RFC 6750's three places: the Authorization header, an `access_token` body
    // field and an `access_token` query parameter. Only the header counts here: a query parameter lands in
    // proxy and access logs and browser history, and a body field would make any JSON body a credential
    // carrier. The strategy is shown the request's headers alone, so a token elsewhere is no token (and a
    // header token beside an `access_token` parameter is not refused as one sent twice).
    const headersOnly = { headers: req.headers };
    // passport's typings declare authenticate()'s result as any; it is the middleware for this request.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-call
    passport.authenticate("bearer", { session: false }, (error: unknown, principal: Principal | false | undefined) => {
      if (error) return next(error);
      if (!principal || (principal.portal && !acceptsPortal(req))) {
        const presented = /^bearer\s+\S/i.test(req.headers.authorization ?? "");
        return next(
          presented
            ? invalidToken()
            : new ApiError("UNAUTHORIZED", "A bearer token is required", {
                headers: { "WWW-Authenticate": CHALLENGE },
              }),
        );
      }
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
    })(headersOnly, res, next);
  };
}
