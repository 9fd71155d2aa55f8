// Bearer authentication for protected operations: passport-http-bearer extracts the token from the
// Authorization header only, jose (through the TokenService) verifies it, and the roles rule of the
// contract is applied.
import type { NextFunction, Request, Response } from "express";
import { Passport } from "passport";
import { Strategy as BearerStrategy } from "passport-http-bearer";
import { ApiError } from "./errors.ts";
import { permits, TokenRejected, type Principal, type TokenService } from "../server/auth/tokens.ts";

const CHALLENGE = 'Bearer realm="integrator-api"';

declare module "express-serve-static-core" {
  interface Request {
    /** The verified principal of a protected operation's request (set here, read by dispatch and the limits). */
    user?: Principal;
  }
}

/**
 * passport-http-bearer reads RFC 6750's three places: the Authorization header, an `access_token` body
 * field and an `access_token` query parameter. Only the header counts here: a query parameter lands in
 * proxy and access logs and browser history, and a body field would make any JSON body a credential
 * carrier. The strategy is shown a view of the request with its headers alone, so a token elsewhere is no
 * token; the verify callback gets the request back from the view.
 *
 * The view is a plain object, not one made with the request as its prototype: V8 gives every object that
 * becomes a prototype a hidden class of its own, made in the old generation and pointing at the request,
 * so each request's objects outlived the young generation's collections and were copied into the old one
 * (docs/performance.md, "Memory as shipped").
 */
interface HeaderView {
  headers: Request["headers"];
  request: Request;
}

function headerOnly<S extends { authenticate(req: Request, options?: object): void }>(strategy: S): S {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with passport's `this`
  const authenticate = strategy.authenticate;
  // passport calls authenticate on a per-request object made from the strategy (with success, fail, ...):
  // `this` is that object, not the strategy.
  strategy.authenticate = function (this: S, req: Request, options?: object) {
    const view: HeaderView = { headers: req.headers, request: req };
    authenticate.call(this, view as unknown as Request, options);
  };
  return strategy;
}

/** Authenticates the request and enforces the role rule; answers 401/403 envelopes itself. */
export function requireBearer(
  tokens: TokenService,
  /** Whether the request's operation declares the PortalSession scheme (accepts a portal credential). */
  acceptsPortal: (req: Request) => boolean = () => false,
): (req: Request, res: Response, next: NextFunction) => void {
  const passport = new Passport();
  passport.use(
    headerOnly(
      new BearerStrategy(
        { passReqToCallback: true },
        (view: Request, token: string, done: (error: unknown, user?: Principal | false, info?: string) => void) => {
          const { request } = view as unknown as HeaderView;
          tokens.verify(token, { allowPortal: acceptsPortal(request) }).then(
            (principal) => done(null, principal),
            (error: unknown) => (error instanceof TokenRejected ? done(null, false, "invalid_token") : done(error)),
          );
        },
      ),
    ),
  );
  return (req, res, next) => {
    // passport's typings declare authenticate()'s result as any; it is the middleware for this request.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-call
    passport.authenticate("bearer", { session: false }, (error: unknown, principal: Principal | false | undefined) => {
      if (error) return next(error);
      if (!principal) {
        const presented = /^bearer\s+\S/i.test(req.headers.authorization ?? "");
        const challenge = presented ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE;
        return next(
          new ApiError(
            "UNAUTHORIZED",
            presented ? "The bearer token is invalid or expired" : "A bearer token is required",
            { headers: { "WWW-Authenticate": challenge } },
          ),
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
    })(req, res, next);
  };
}
