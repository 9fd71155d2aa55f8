// Bearer authentication for protected operations: passport-http-bearer extracts the token from the
// Authorization header only, jose (through the TokenService) verifies it, and the roles rule of the
// contract is applied.
import type { NextFunction, Request, Response } from "express";
import { Passport, type Framework } from "passport";
import { Strategy as BearerStrategy } from "passport-http-bearer";
import { ApiError } from "./errors.ts";
import { permits, TokenRejected, type Principal, type TokenService } from "../server/auth/tokens.ts";

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

/** What a passport strategy calls on the object passport makes from it for one request. */
interface StrategyActions {
  success(user: unknown, info?: unknown): void;
  fail(challenge?: unknown, status?: number): void;
  error(error: unknown): void;
  pass(): void;
  redirect(url: string, status?: number): void;
}

type AuthenticateCallback = (error: unknown, user?: unknown, challenge?: unknown, status?: number) => void;

interface Authenticating {
  authenticate(req: Request, options?: object): void;
}

/**
 * The framework passport runs on here (Authenticator#framework). Passport's own, for Connect and express,
 * makes each request's strategy with Object.create and then assigns it success, fail, error, pass and
 * redirect one by one (and gives the request passport's login helpers the same way). Until V8's optimising
 * compiler has that code, some 15,000 requests into a process, functions assigned so kept the whole request
 * alive through young-generation collections: about a tenth of each request's bytes were copied into the
 * old generation (docs/performance.md, "Warm-up"). This one writes the request's strategy as one object
 * literal, which does not. It does what passport's does for what this module asks of it: the named
 * strategy, a callback, no session. It holds the strategy itself (passport's strategy registry is read only by
 * passport's own framework), so the strategy is not also registered with passport.use.
 */
function oneLiteralPerRequest(name: string, strategy: Authenticating): Framework<never, void> {
  return {
    initialize() {
      throw new Error("passport.initialize() is not used: authentication here keeps no session");
    },
    authenticate(_passport, requested, options?: object, callback?: AuthenticateCallback) {
      if (requested !== name || callback === undefined) throw new Error(`only the ${name} strategy, with a callback`);
      return (req: Request, _res: Response, next: NextFunction) => {
        const attempt: StrategyActions & Authenticating = {
          __proto__: strategy,
          success: (user: unknown, info?: unknown) => callback(null, user, info),
          fail: (challenge?: unknown, status?: number) =>
            typeof challenge === "number"
              ? callback(null, false, undefined, challenge)
              : callback(null, false, challenge, status),
          error: (error: unknown) => callback(error),
          pass: () => next(),
          redirect: () => callback(new Error(`the ${name} strategy asked for a redirect`)),
        } as unknown as StrategyActions & Authenticating;
        attempt.authenticate(req, options);
      };
    },
  };
}

/** Authenticates the request and enforces the role rule; answers 401/403 envelopes itself. */
export function requireBearer(
  tokens: TokenService,
  /** Whether the request's operation declares the PortalSession scheme (accepts a portal credential). */
  acceptsPortal: (req: Request) => boolean = () => false,
): (req: Request, res: Response, next: NextFunction) => void {
  const strategy = headerOnly(
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
  );
  const passport = new Passport();
  passport.framework(oneLiteralPerRequest("bearer", strategy));
  return (req, res, next) => {
    // passport's typings declare authenticate()'s result as any; it is the middleware for this request.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-call
    passport.authenticate("bearer", { session: false }, (error: unknown, principal: Principal | false | undefined) => {
      if (error) return next(error);
      if (!principal) {
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
    })(req, res, next);
  };
}
