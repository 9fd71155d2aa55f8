// Rate limits (rate-limiter-flexible), fixed one-minute windows:
// - principal: a token's subject within its tenant, on protected routes (RATE_LIMIT_PER_MINUTE);
// - address: the client address on open routes, token, callbacks, JWKS and unknown routes
//   (RATE_LIMIT_ANON_PER_MINUTE);
// - unauthenticated: the client address on protected routes when the request brought no valid token, or
//   one whose roles are not allowed (401 or 403; also RATE_LIMIT_ANON_PER_MINUTE). Once over, that address is refused on protected routes before its
//   token is even looked at until the window ends, so guessing tokens gains nothing from speed;
// - probe: the client address on /v1/health and /v1/readyz, a bucket of its own (RATE_LIMIT_PROBE_PER_MINUTE),
//   so a monitor polling readiness is neither locked out by other traffic from its address nor able to
//   lock others out.
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
import type { Principal } from "../auth/tokens.ts";
import { ApiError } from "./errors.ts";
import type { Logger } from "../logger.ts";
import { recordRateLimited } from "../metrics.ts";
import type { Services } from "../services.ts";

export type RateLimitScope = "principal" | "address" | "unauthenticated" | "probe";

const WINDOW_SECONDS = 60;
const MAX_BLOCKED_ADDRESSES = 100_000;

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
  /** Open and unknown routes: counts against the client address (probes in their own bucket). */
  open(isProbe: (res: Response) => boolean): Middleware;
  /** Protected routes: wraps the authentication middleware (see the module comment). */
  protect(authenticate: Middleware): Middleware;
}

export function createRateLimits(services: Services, logger: Logger): RateLimits {
  const { perMinute, anonPerMinute, probePerMinute } = services.config.rateLimit;
  const buckets = {
    principal: createBucket("principal", perMinute, services, true),
    address: createBucket("address", anonPerMinute, services),
    unauthenticated: createBucket("unauthenticated", anonPerMinute, services),
    probe: createBucket("probe", probePerMinute, services),
  };
  // Addresses over the unauthenticated limit in this process, until their window ends.
  const blockedUntil = new Map<string, number>();

  function blockedFor(address: string): number {
    const until = blockedUntil.get(address);
    if (until === undefined) return 0;
    const left = until - Date.now();
    if (left <= 0) blockedUntil.delete(address);
    return Math.max(0, left);
  }

  function block(address: string, ms: number): void {
    if (blockedUntil.size >= MAX_BLOCKED_ADDRESSES) {
      const now = Date.now();
      for (const [key, until] of blockedUntil) if (until <= now) blockedUntil.delete(key);
    }
    if (blockedUntil.size < MAX_BLOCKED_ADDRESSES) blockedUntil.set(address, Date.now() + ms);
  }

  /** Counts one request; sets the RateLimit-* headers; resolves to the 429 error when over the limit. */
  async function consume(bucket: Bucket, key: string, res: Response): Promise<ApiError | undefined> {
    try {
      const outcome = await bucket.limiter.consume(key);
      setRateLimitHeaders(res, bucket.limit, outcome.remainingPoints, outcome.msBeforeNext);
      return undefined;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        if (bucket.scope === "unauthenticated") block(key, rejection.msBeforeNext);
        return rateLimited(bucket, rejection.msBeforeNext);
      }
      // The store and its in-memory stand-in both failed: serve rather than refuse everyone.
      logger.warn({ err: rejection, scope: bucket.scope }, "rate limit could not be checked; request allowed");
      return undefined;
    }
  }

  const addressOf = (req: Request) => addressKey(req.ip ?? req.socket.remoteAddress);

  return {
    open(isProbe) {
      return (req, res, next) => {
        const bucket = isProbe(res) ? buckets.probe : buckets.address;
        consume(bucket, addressOf(req), res).then(next, next);
      };
    },

    protect(authenticate) {
      return (req, res, next) => {
        const address = addressOf(req);
        const blocked = blockedFor(address);
        if (blocked > 0) return next(rateLimited(buckets.unauthenticated, blocked));
        authenticate(req, res, (error?: unknown) => {
          const principal = req.user as Principal | undefined;
          const counted =
            error || !principal
              ? consume(buckets.unauthenticated, address, res)
              : consume(buckets.principal, principalKey(principal), res);
          counted.then((limited) => next(limited ?? error), next);
        });
      };
    },
  };
}
