// Rate limits (rate-limiter-flexible), fixed one-minute windows, each bucket counted apart:
// - principal: a token's subject within its tenant, on protected routes (RATE_LIMIT_PER_MINUTE);
// - forbidden: the same key for requests whose token verified but whose roles are not allowed (403;
//   RATE_LIMIT_ANON_PER_MINUTE), so failures never eat a principal's own allowance;
// - unauthenticated: the client address for requests to protected routes answered 401 (no token or one
//   that does not verify; RATE_LIMIT_ANON_PER_MINUTE). Once over, that address's further failures are
//   429, but a request whose token verifies is never refused for what other requests from its address did;
// - token: the client address on POST /token (RATE_LIMIT_ANON_PER_MINUTE; the password grant also
//   backs off per username, handlers/auth);
// - callback: the client address on partner callbacks (RATE_LIMIT_CALLBACK_PER_MINUTE);
// - unmatched: the client address on unknown routes (RATE_LIMIT_ANON_PER_MINUTE), so junk paths starve
//   nothing else;
// - address: the client address on the other open routes (the JWKS) and on CORS preflights
//   (RATE_LIMIT_ANON_PER_MINUTE);
// - probe: the client address on /v1/health and /v1/readyz (RATE_LIMIT_PROBE_PER_MINUTE), so a monitor
//   polling readiness is neither locked out by other traffic from its address nor able to lock others out.
// Counters live in memory (one set per process) or, with RATE_LIMIT_STORE=postgres, in the unlogged
// table integrator.rate_limits shared by every replica; should PostgreSQL fail, an in-memory limiter
// stands in. Every counted answer carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset;
// a refusal is 429 RATE_LIMITED with Retry-After.
import { createHash } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import ipaddr from "ipaddr.js";
import {
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRes,
  type RateLimiterAbstract,
} from "rate-limiter-flexible";
import type { Principal } from "../foundation/auth/tokens.ts";
import { ApiError } from "./errors.ts";
import type { Logger } from "../foundation/logger.ts";
import { recordRateLimited } from "../foundation/metrics.ts";
import type { Services } from "../foundation/services.ts";

export type RateLimitScope =
  "principal" | "forbidden" | "unauthenticated" | "token" | "callback" | "unmatched" | "address" | "probe";

/** Which bucket an open (unauthenticated) route counts in. */
export type OpenRoute = "token" | "callback" | "unmatched" | "address" | "probe";

const WINDOW_SECONDS = 60;

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

interface Bucket {
  scope: RateLimitScope;
  limit: number;
  limiter: RateLimiterAbstract;
}

function createBucket(scope: RateLimitScope, limit: number, services: Services, clearsExpiredRows = false): Bucket {
  const keyPrefix = `rl:${scope}`;
  const memory = new RateLimiterMemory({ keyPrefix, points: limit, duration: WINDOW_SECONDS });
  if (services.config.rateLimit.store === "memory") return { scope, limit, limiter: memory };
  const limiter = new RateLimiterPostgres({
    storeClient: services.db,
    storeType: "knex",
    schemaName: "integrator",
    tableName: "rate_limits",
    // The table comes from a migration; without this the library would create one itself, asynchronously.
    tableCreated: true,
    // Every five minutes, rows expired for an hour are deleted; one bucket per process does it for the table.
    clearExpiredByTimeout: clearsExpiredRows,
    keyPrefix,
    points: limit,
    duration: WINDOW_SECONDS,
    // A key over its limit is refused from memory until its window ends: no query per refused request.
    inMemoryBlockOnConsumed: limit + 1,
    insuranceLimiter: memory,
  });
  return { scope, limit, limiter };
}

/** The rate-limit key of a client address: IPv4 as is, IPv6 by its /64 (one subscriber's usual allocation). */
export function addressKey(raw: string | undefined): string {
  if (!raw) return "unknown";
  try {
    const parsed = ipaddr.parse(raw);
    if (parsed.kind() === "ipv4") return parsed.toString();
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
    return `${v6.toNormalizedString().split(":").slice(0, 4).join(":")}::/64`;
  } catch {
    return raw;
  }
}

function principalKey(principal: Principal): string {
  const key = `${principal.tenantId}:${principal.subject}`;
  // The store's key column holds 255 characters; an external provider's subjects may be long.
  return key.length <= 200 ? key : createHash("sha256").update(key).digest("base64url");
}

function seconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
}

function setRateLimitHeaders(res: Response, limit: number, remaining: number, msBeforeReset: number): void {
  res.setHeader("RateLimit-Limit", String(limit));
  res.setHeader("RateLimit-Remaining", String(Math.max(0, remaining)));
  res.setHeader("RateLimit-Reset", String(seconds(msBeforeReset)));
}

function rateLimited(bucket: Bucket, msBeforeReset: number): ApiError {
  recordRateLimited(bucket.scope);
  const wait = Math.max(1, seconds(msBeforeReset));
  return new ApiError("RATE_LIMITED", `Too many requests; retry after ${wait} s`, {
    headers: {
      "Retry-After": String(wait),
      "RateLimit-Limit": String(bucket.limit),
      "RateLimit-Remaining": "0",
      "RateLimit-Reset": String(wait),
    },
    details: { scope: bucket.scope, limit: bucket.limit, window_seconds: WINDOW_SECONDS },
  });
}

export interface RateLimits {
  /** Open and unknown routes: counts against the client address in the route's own bucket. */
  open(routeOf: (res: Response) => OpenRoute): Middleware;
  /** Protected routes: wraps the authentication middleware (see the module comment). */
  protect(authenticate: Middleware): Middleware;
}

export function createRateLimits(services: Services, logger: Logger): RateLimits {
  const { perMinute, anonPerMinute, callbackPerMinute, probePerMinute } = services.config.rateLimit;
  const buckets: Record<RateLimitScope, Bucket> = {
    principal: createBucket("principal", perMinute, services, true),
    forbidden: createBucket("forbidden", anonPerMinute, services),
    unauthenticated: createBucket("unauthenticated", anonPerMinute, services),
    token: createBucket("token", anonPerMinute, services),
    callback: createBucket("callback", callbackPerMinute, services),
    unmatched: createBucket("unmatched", anonPerMinute, services),
    address: createBucket("address", anonPerMinute, services),
    probe: createBucket("probe", probePerMinute, services),
  };

  /** Counts one request; sets the RateLimit-* headers; resolves to the 429 error when over the limit. */
  async function consume(bucket: Bucket, key: string, res: Response): Promise<ApiError | undefined> {
    try {
      const outcome = await bucket.limiter.consume(key);
      setRateLimitHeaders(res, bucket.limit, outcome.remainingPoints, outcome.msBeforeNext);
      return undefined;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return rateLimited(bucket, rejection.msBeforeNext);
      // The store and its in-memory stand-in both failed: serve rather than refuse everyone.
      logger.warn({ err: rejection, scope: bucket.scope }, "rate limit could not be checked; request allowed");
      return undefined;
    }
  }

  const addressOf = (req: Request) => addressKey(req.ip ?? req.socket.remoteAddress);

  return {
    open(routeOf) {
      return (req, res, next) => {
        consume(buckets[routeOf(res)], addressOf(req), res).then(next, next);
      };
    },

    protect(authenticate) {
      return (req, res, next) => {
        // The token is looked at first: whether it verifies decides which bucket the request counts in.
        authenticate(req, res, (error?: unknown) => {
          const principal = req.user;
          let counted: Promise<ApiError | undefined>;
          if (!error && principal) counted = consume(buckets.principal, principalKey(principal), res);
          else if (error instanceof ApiError && error.code === "UNAUTHORIZED")
            counted = consume(buckets.unauthenticated, addressOf(req), res);
          else if (error instanceof ApiError && error.code === "FORBIDDEN") {
            const forbidden = res.locals.forbiddenPrincipal as Principal | undefined;
            counted = forbidden
              ? consume(buckets.forbidden, principalKey(forbidden), res)
              : consume(buckets.unauthenticated, addressOf(req), res);
          } else counted = Promise.resolve(undefined);
          counted.then((limited) => next(limited ?? error), next);
        });
      };
    },
  };
}
