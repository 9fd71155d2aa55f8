// The one place that reads process.env. Every setting is declared here with its default, its parser
// and a one-line description; the settings table of docs/operating.md is checked against this list by a test.
import { isIP } from "node:net";
import path from "node:path";
import v8 from "node:v8";
import { DEFAULT_WEBHOOK_PORTS, parsePortRanges, type PortRanges } from "./url-safety.ts";

/**
 * LOAD_SHED_BODY_MEMORY_MB's default, as a share of the V8 heap limit: a parsed JSON body holds several
 * times its bytes on the heap until its answer is sent, beside what the process keeps anyway.
 */
export const HEAP_SHARE_FOR_BODIES = 24;

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Parser<T> = (raw: string, name: string) => T;

const text: Parser<string> = (raw) => raw;

function integer(min: number, max: number): Parser<number> {
  return (raw, name) => {
    if (!/^-?\d+$/.test(raw.trim()))
      throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
    const value = Number(raw.trim());
    if (value < min || value > max)
      throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got ${value}`);
    return value;
  };
}

function decimal(min: number, max: number): Parser<number> {
  return (raw, name) => {
    const value = Number(raw.trim());
    if (!/^\d+(\.\d+)?$/.test(raw.trim()) || value < min || value > max)
      throw new ConfigError(`${name} must be a number from ${min} to ${max}, got "${raw}"`);
    return value;
  };
}

const boolean: Parser<boolean> = (raw, name) => {
  const value = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(value)) return true;
  if (["0", "false", "no", "off", ""].includes(value)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
};

const url: Parser<string> = (raw, name) => {
  try {
    const parsed = new URL(raw);
    if (!["http:", "https:"].includes(parsed.protocol)) throw new Error("scheme");
    return raw.replace(/\/+$/, "");
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
};

const postgresUrl: Parser<string> = (raw, name) => {
  try {
    const parsed = new URL(raw);
    if (!["postgres:", "postgresql:"].includes(parsed.protocol)) throw new Error("scheme");
    return raw;
  } catch {
    throw new ConfigError(`${name} must be a postgres:// connection URL`);
  }
};

const list: Parser<string[]> = (raw) =>
  raw
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);

/** Comma-separated browser origins (scheme://host[:port], no path); each is kept as the URL API serialises it. */
const origins: Parser<string[]> = (raw, name) =>
  list(raw, name).map((entry) => {
    let parsed: URL;
    try {
      parsed = new URL(entry);
    } catch {
      throw new ConfigError(`${name} must list origins such as https://app.example.com, got "${entry}"`);
    }
    if (!["http:", "https:"].includes(parsed.protocol) || parsed.origin !== entry.replace(/\/$/, "").toLowerCase())
      throw new ConfigError(`${name} must list origins (scheme://host[:port], no path or wildcard), got "${entry}"`);
    return parsed.origin;
  });

export type KeyEncoding = "hex" | "base64" | "base64url";

/**
 * A 32-byte key, strictly: 64 hex characters, or 43 characters of base64 or base64url (an optional
 * trailing "=") that decode to exactly 32 bytes and re-encode to the same text. An all-zero key is refused.
 */
export const encryptionKey: Parser<{ key: Buffer; encoding: KeyEncoding }> = (raw, name) => {
  const trimmed = raw.trim();
  const expected = `${name} must be 32 bytes, as 64 hex characters or 43 base64/base64url characters (optionally "=" padded)`;
  let encoding: KeyEncoding;
  let key: Buffer;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) {
    encoding = "hex";
    key = Buffer.from(trimmed, "hex");
  } else {
    const unpadded = trimmed.endsWith("=") ? trimmed.slice(0, -1) : trimmed;
    if (/^[A-Za-z0-9+/]{43}$/.test(unpadded)) encoding = "base64";
    else if (/^[A-Za-z0-9_-]{43}$/.test(unpadded)) encoding = "base64url";
    else throw new ConfigError(expected);
    key = Buffer.from(unpadded, encoding);
    // 43 characters carry 258 bits: the last two must be zero, or the text is not a canonical encoding.
    if (key.length !== 32 || key.toString(encoding).replace(/=+$/, "") !== unpadded) throw new ConfigError(expected);
  }
  if (key.every((byte) => byte === 0)) throw new ConfigError(`${name} is all zero bytes: generate a random key`);
  const weakness = lowEntropy(key);
  if (weakness) throw new ConfigError(`${name} ${weakness}: generate a random key (openssl rand -hex 32)`);
  return { key, encoding };
};

/** The most retries a delivery can have: MAX_DELIVERY_ATTEMPTS is at most 25. */
export const MAX_RETRIES = 24;
const MAX_RETRY_WAIT_SECONDS = 7 * 86400;
/**
 * The longest retry window, from a delivery's first attempt to its last retry: Stripe's, which retries for up
 * to 3 days (Svix's schedule spans about 27½ hours). docs/integrating.md compares them.
 */
export const MAX_RETRY_WINDOW_SECONDS = 3 * 86400;

/** A duration written as a whole number of seconds, minutes, hours or days (`30s`, `5m`, `2h`, `1d`; a bare number is seconds); undefined when it is not one. */
function durationSeconds(raw: string): number | undefined {
  const match = /^(\d+)\s*([smhd]?)$/.exec(raw.trim().toLowerCase());
  if (!match) return undefined;
  const seconds = Number(match[1]) * ({ "": 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2] ?? ""] ?? 1);
  return Number.isSafeInteger(seconds) ? seconds : undefined;
}

/** A duration as the settings write it, largest units first: `9d 4h 5m`, `27h 35m 5s` is `1d 3h 35m 5s`. */
export function spellDuration(seconds: number): string {
  const parts: string[] = [];
  let rest = Math.round(seconds);
  for (const [unit, size] of [
    ["d", 86400],
    ["h", 3600],
    ["m", 60],
    ["s", 1],
  ] as const) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0) parts.push(`${count}${unit}`);
  }
  return parts.length > 0 ? parts.join(" ") : "0s";
}

/**
 * Waits before retry 1, 2, …: comma-separated durations, each a whole number of seconds, minutes, hours or
 * days (`30s`, `5m`, `2h`, `1d`; a bare number is seconds), at most 7 days each and MAX_RETRIES in all.
 */
const retrySchedule: Parser<number[]> = (raw, name) => {
  const entries = list(raw, name);
  const expected = `${name} must list up to ${MAX_RETRIES} waits such as 5m,2h,8h (s, m, h or d; at most 7 days each)`;
  if (entries.length === 0 || entries.length > MAX_RETRIES) throw new ConfigError(`${expected}, got "${raw}"`);
  return entries.map((entry) => {
    const seconds = durationSeconds(entry);
    if (seconds === undefined || seconds > MAX_RETRY_WAIT_SECONDS) throw new ConfigError(`${expected}, got "${entry}"`);
    return seconds;
  });
};

/** WEBHOOK_RETRY_WINDOW: a duration of at least a second and at most MAX_RETRY_WINDOW_SECONDS. */
const retryWindow: Parser<number> = (raw, name) => {
  const seconds = durationSeconds(raw);
  if (seconds === undefined || seconds < 1 || seconds > MAX_RETRY_WINDOW_SECONDS)
    throw new ConfigError(
      `${name} must be a duration of at most 3 days (Stripe's retry window), such as 27h or 3d (s, m, h or d), got "${raw}"`,
    );
  return seconds;
};

/**
 * The wait before each retry (index 0: retry 1), MAX_RETRIES of them: the schedule's waits, its last
 * repeated; or, with WEBHOOK_RETRY_BASE_SECONDS, base × 6^(n−1) capped at 10 hours.
 */
export function retryWaits(schedule: number[], baseSeconds: number | undefined): number[] {
  return Array.from({ length: MAX_RETRIES }, (_, index) =>
    baseSeconds === undefined
      ? (schedule[Math.min(index, schedule.length - 1)] ?? 0)
      : Math.min(baseSeconds * 6 ** index, 10 * 3600),
  );
}

/** Seconds from a delivery's first attempt to its last retry, with `maxAttempts` attempts and these waits. */
export function retryWindowSeconds(maxAttempts: number, waitsSeconds: readonly number[]): number {
  return waitsSeconds.slice(0, Math.max(0, maxAttempts - 1)).reduce((sum, wait) => sum + wait, 0);
}

/**
 * How many attempts a delivery gets. With WEBHOOK_RETRY_WINDOW (`windowSeconds`): the first attempt and
 * every retry the waits place within the window of it; otherwise MAX_DELIVERY_ATTEMPTS, whose retries must
 * end within MAX_RETRY_WINDOW_SECONDS. Throws ConfigError saying what to change when the settings ask for
 * a window longer than that, one the waits cannot fill within MAX_RETRIES retries, or one too short for a
 * single retry. `schedule` names the waits' setting as it was given, for the messages.
 */
export function retryAttempts(
  waitsSeconds: readonly number[],
  settings: { maxAttempts: number; windowSeconds: number | undefined; schedule: string },
): number {
  const { windowSeconds, schedule } = settings;
  if (windowSeconds === undefined) {
    const window = retryWindowSeconds(settings.maxAttempts, waitsSeconds);
    if (window <= MAX_RETRY_WINDOW_SECONDS) return settings.maxAttempts;
    let fits = 1;
    while (fits < settings.maxAttempts && retryWindowSeconds(fits + 1, waitsSeconds) <= MAX_RETRY_WINDOW_SECONDS)
      fits++;
    throw new ConfigError(
      `MAX_DELIVERY_ATTEMPTS=${settings.maxAttempts} with ${schedule} retries a delivery for ${spellDuration(window)} after its first attempt; ` +
        `the retry window is at most 3 days (Stripe's): set MAX_DELIVERY_ATTEMPTS to ${fits} or fewer, shorten the waits, or set WEBHOOK_RETRY_WINDOW instead`,
    );
  }
  const mostAttempts = MAX_RETRIES + 1;
  let attempts = 1;
  while (attempts < mostAttempts && retryWindowSeconds(attempts + 1, waitsSeconds) <= windowSeconds) attempts++;
  // The last wait repeats: one more retry would still fall within the window.
  const reached = retryWindowSeconds(mostAttempts, waitsSeconds);
  if (attempts === mostAttempts && reached + (waitsSeconds[MAX_RETRIES - 1] ?? 0) <= windowSeconds)
    throw new ConfigError(
      `WEBHOOK_RETRY_WINDOW=${spellDuration(windowSeconds)} with ${schedule} takes more than ${MAX_RETRIES} retries to fill ` +
        `(${MAX_RETRIES} reach ${spellDuration(reached)}): lengthen the waits, e.g. WEBHOOK_RETRY_SCHEDULE=5s,5m,30m,2h,5h,10h`,
    );
  if (attempts === 1)
    throw new ConfigError(
      `WEBHOOK_RETRY_WINDOW=${spellDuration(windowSeconds)} ends before the first retry (${spellDuration(waitsSeconds[0] ?? 0)} after the first attempt with ${schedule}): ` +
        "lengthen the window, or set MAX_DELIVERY_ATTEMPTS=1 for no retries",
    );
  return attempts;
}

/**
 * Why a 32-byte key is plainly not random, or undefined. Each rule passes a random key but for odds
 * below 1e-13: one byte repeated; fewer than 16 distinct bytes (a random key has about 30); bytes that
 * count up or down by one step (0x00 0x01 0x02 ...); only printable ASCII (a passphrase, not a key).
 */
function lowEntropy(key: Buffer): string | undefined {
  const first = key[0] ?? 0;
  if (key.every((byte) => byte === first)) return `is one byte (0x${first.toString(16).padStart(2, "0")}) repeated`;
  const distinct = new Set(key).size;
  if (distinct < 16) return `has too little entropy (${distinct} distinct bytes in 32)`;
  const step = ((key[1] ?? 0) - first + 256) % 256;
  if (key.every((byte, index) => index === 0 || (byte - (key[index - 1] ?? 0) + 256) % 256 === step))
    return "has too little entropy (its bytes count in steps of one size)";
  if (key.every((byte) => byte >= 0x20 && byte <= 0x7e))
    return "has too little entropy (printable text, not random bytes)";
  return undefined;
}

const resolveMap: Parser<Record<string, string>> = (raw, name) => {
  const entries: Record<string, string> = {};
  for (const pair of list(raw, name)) {
    const [host, address] = pair.split("=");
    if (!host || !address) throw new ConfigError(`${name} must look like host=ip,host2=ip, got "${pair}"`);
    entries[host.toLowerCase()] = address;
  }
  return entries;
};

const portRanges: Parser<PortRanges> = (raw, name) => {
  const parsed = parsePortRanges(raw);
  if (typeof parsed === "string") throw new ConfigError(`${name} ${parsed}`);
  return parsed;
};

const nodeEnv: Parser<string> = (raw, name) => {
  if (!["development", "production", "test"].includes(raw))
    throw new ConfigError(`${name} must be development, production or test, got "${raw}"`);
  return raw;
};

const rateLimitStore: Parser<"memory" | "postgres"> = (raw, name) => {
  if (raw !== "memory" && raw !== "postgres") throw new ConfigError(`${name} must be memory or postgres, got "${raw}"`);
  return raw;
};

/** express's "trust proxy": false, a hop count, or addresses / CIDR ranges / loopback, linklocal, uniquelocal. */
const trustProxy: Parser<boolean | number | string[]> = (raw, name) => {
  const value = raw.trim().toLowerCase();
  if (["false", "no", "off", "0"].includes(value)) return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 10)
      throw new ConfigError(
        `${name} must be false, a hop count from 1 to 10, or addresses and CIDR ranges, got "${raw}"`,
      );
    return hops;
  }
  const entries = list(raw, name);
  for (const entry of entries) {
    if (["loopback", "linklocal", "uniquelocal"].includes(entry)) continue;
    const [address, bits, extra] = entry.split("/");
    const validBits =
      bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (isIP(address ?? "") === 6 ? 128 : 32));
    if (!address || isIP(address) === 0 || !validBits || extra !== undefined) {
      throw new ConfigError(
        `${name} must be false, a hop count from 1 to 10, or addresses and CIDR ranges (or loopback, linklocal, uniquelocal), got "${entry}"`,
      );
    }
  }
  return entries;
};

/** CSP frame-ancestors sources: 'none', 'self', or http(s) origins (wildcard subdomains allowed), space-separated. */
const frameAncestors: Parser<string> = (raw, name) => {
  const sources = raw.trim().split(/\s+/);
  const valid = (source: string) =>
    source === "'none'" || source === "'self'" || /^https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$/.test(source);
  if (sources.length === 0 || !sources.every(valid) || (sources.includes("'none'") && sources.length > 1)) {
    throw new ConfigError(
      `${name} must be 'none', or 'self' and/or http(s) origins separated by spaces (e.g. https://dashboard.example.com), got "${raw}"`,
    );
  }
  return sources.join(" ");
};

const logLevel: Parser<string> = (raw, name) => {
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(raw)) {
    throw new ConfigError(`${name} must be one of fatal, error, warn, info, debug, trace, silent, got "${raw}"`);
  }
  return raw;
};

/** OTEL_TRACES_EXPORTER: otlp (the one exporter built in) or none. */
const tracesExporter: Parser<"otlp" | "none"> = (raw, name) => {
  const value = raw.trim().toLowerCase();
  if (value !== "otlp" && value !== "none") throw new ConfigError(`${name} must be otlp or none, got "${raw}"`);
  return value;
};

export type OtlpProtocol = "http/protobuf" | "http/json";

/** OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: OTLP over HTTP, protobuf or JSON (gRPC is not built in). */
const otlpProtocol: Parser<OtlpProtocol> = (raw, name) => {
  const value = raw.trim();
  if (value !== "http/protobuf" && value !== "http/json")
    throw new ConfigError(`${name} must be http/protobuf or http/json (grpc is not supported), got "${raw}"`);
  return value;
};

export type TraceSampler =
  | "always_on"
  | "always_off"
  | "traceidratio"
  | "parentbased_always_on"
  | "parentbased_always_off"
  | "parentbased_traceidratio";

const SAMPLERS: readonly TraceSampler[] = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
];

const traceSampler: Parser<TraceSampler> = (raw, name) => {
  const value = raw.trim().toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(value))
    throw new ConfigError(`${name} must be one of ${SAMPLERS.join(", ")}, got "${raw}"`);
  return value as TraceSampler;
};

interface Setting<T> {
  parse: Parser<T>;
  /** The default as text, parsed like a given value; undefined means the setting is optional. */
  fallback: string | undefined;
  description: string;
}

function setting<T, F extends string | undefined>(
  parse: Parser<T>,
  fallback: F,
  description: string,
): Setting<T> & { fallback: F } {
  return { parse, fallback, description };
}

export const DEFAULT_MIME_TYPES = [
  "application/pdf",
  "application/msword",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/vnd.ms-excel",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.oasis.opendocument.text",
  "application/rtf",
  "text/plain",
  "text/csv",
  "image/png",
  "image/jpeg",
  "image/tiff",
  "image/gif",
  "image/webp",
  "image/heic",
];

/** Every environment variable the service reads. */
export const SETTINGS = {
  NODE_ENV: setting(
    nodeEnv,
    "development",
    "development, production or test. production refuses the demo seed and the generated encryption key, and serves no API description unless API_DOCS=true.",
  ),
  PORT: setting(integer(0, 65535), "8080", "HTTP port of the API."),
  PUBLIC_BASE_URL: setting(
    url,
    undefined,
    "Public base URL: the token issuer and the base of generated links. Required in production; otherwise links default to http://localhost:$PORT and the issuer to http://localhost (whatever the port, so every replica and the admin CLI agree).",
  ),
  DATABASE_URL: setting(
    postgresUrl,
    undefined,
    "PostgreSQL 14+ connection URL. Unset: an embedded PostgreSQL is started with its data under DATA_DIR.",
  ),
  DATA_DIR: setting(text, ".data", "Directory for the embedded PostgreSQL and the generated encryption key."),
  EMBEDDED_PG_PORT: setting(integer(1, 65535), "54329", "Port of the embedded PostgreSQL (loopback only)."),
  DB_POOL_MAX: setting(integer(1, 500), "10", "Largest number of connections in the API's database pool."),
  ENCRYPTION_KEY: setting(
    encryptionKey,
    undefined,
    "32-byte key for secrets at rest: 64 hex characters, or 43 base64/base64url characters (optionally = padded); a key that is plainly not random (all zero, one byte repeated, few distinct bytes, a counting sequence, printable text) is refused. Required in production; otherwise generated into DATA_DIR when unset.",
  ),
  LOG_LEVEL: setting(logLevel, "info", "fatal, error, warn, info, debug, trace or silent."),
  ACCESS_TOKEN_TTL_SECONDS: setting(integer(60, 86400), "900", "Lifetime of tokens issued by POST /token."),
  AUTH_MAX_TOKEN_LIFETIME_SECONDS: setting(
    integer(60, 31 * 86400),
    "86400",
    "Longest lifetime (exp - iat) of a token accepted, ours or the external provider's; also caps admin token:issue. Tokens without exp or iat are refused.",
  ),
  AUTH_REFRESH_SECONDS: setting(
    integer(0, 3600),
    "5",
    "How often a process reloads disabled users and clients and the signing keys (a disabled principal's tokens stop working within this time; 0: on every request).",
  ),
  AUTH_LOGIN_FREE_FAILURES: setting(
    integer(0, 1000),
    "5",
    "Failed password grants per username before backoff starts (counted in PostgreSQL, shared by every replica).",
  ),
  AUTH_LOGIN_BACKOFF_BASE_SECONDS: setting(
    integer(1, 3600),
    "1",
    "Backoff after the free failures: failure n beyond them locks the username for base x 2^(n-1) seconds.",
  ),
  AUTH_LOGIN_BACKOFF_MAX_SECONDS: setting(
    integer(1, 86400),
    "900",
    "Longest lock of a username after failed password grants.",
  ),
  AUTH_HASH_CONCURRENCY: setting(
    integer(1, 64),
    "2",
    "Password and client-secret checks (scrypt) run at once per process; more wait in a queue.",
  ),
  AUTH_HASH_QUEUE_MAX: setting(
    integer(0, 10_000),
    "32",
    "Checks waiting for a scrypt slot beyond which POST /token answers 503 with Retry-After at once.",
  ),
  AUTH_AUDIENCE_SELF: setting(
    text,
    "integrator-api",
    "Audience of the tokens this service issues and accepts from itself.",
  ),
  AUTH_JWKS_URL: setting(url, undefined, "JWKS URL of an external identity provider whose tokens are also accepted."),
  AUTH_ISSUER: setting(
    text,
    undefined,
    "Issuer (iss) of the external identity provider's tokens. Required with AUTH_JWKS_URL.",
  ),
  AUTH_AUDIENCE: setting(text, undefined, "Audience (aud) the external identity provider's tokens must carry."),
  AUTH_TENANT_CLAIM: setting(
    text,
    "tenant_id",
    "Claim of an external token holding the tenant id (dotted paths allowed).",
  ),
  AUTH_ROLES_CLAIM: setting(
    text,
    "roles",
    "Claim of an external token holding the roles array (dotted paths allowed, e.g. realm_access.roles).",
  ),
  API_IDEMPOTENCY_TTL_HOURS: setting(
    decimal(0.0001, 24 * 365),
    "24",
    "Hours an Idempotency-Key is remembered (fractions allowed).",
  ),
  API_IDEMPOTENCY_MEMORY_MB: setting(
    decimal(0, 4096),
    "16",
    "MiB of finished Idempotency-Key responses each API process keeps in memory until shortly before they expire, so replays need no database round trip; 0 keeps none.",
  ),
  INTAKE_ALLOWED_MIME_TYPES: setting(
    list,
    DEFAULT_MIME_TYPES.join(","),
    "Comma-separated MIME types intake accepts; others are rejected per item.",
  ),
  INTAKE_MAX_FILE_SIZE_BYTES: setting(
    integer(1, Number.MAX_SAFE_INTEGER),
    String(100 * 1024 * 1024),
    "Largest file_size intake accepts; larger items are rejected per item.",
  ),
  MAX_DELIVERY_ATTEMPTS: setting(
    integer(1, 25),
    "3",
    "Attempts per webhook delivery before it is failed; its retries must end within 3 days of the first attempt (a longer window stops the start, saying how many fit). Not with WEBHOOK_RETRY_WINDOW.",
  ),
  WEBHOOK_RETRY_SCHEDULE: setting(
    retrySchedule,
    "5m,2h,8h,10h",
    "Waits before retry 1, 2, 3, … of a failed delivery (s, m, h or d; a bare number is seconds); beyond the list its last wait repeats. By default, with 3 attempts: 5 minutes, then 2 hours.",
  ),
  WEBHOOK_RETRY_BASE_SECONDS: setting(
    integer(0, 86400),
    undefined,
    "Instead of WEBHOOK_RETRY_SCHEDULE (not both): retry n waits base x 6^(n-1) seconds, capped at 10 hours, the schedule of earlier versions. Unset by default.",
  ),
  WEBHOOK_RETRY_WINDOW: setting(
    retryWindow,
    undefined,
    "Instead of MAX_DELIVERY_ATTEMPTS (not both): retry a failed delivery, along the waits of WEBHOOK_RETRY_SCHEDULE, for as long as this after its first attempt; at most 3d (Stripe's window; Svix's spans about 27h). Unset by default.",
  ),
  WEBHOOK_TIMEOUT_MS: setting(integer(100, 120000), "10000", "Timeout of one webhook delivery attempt."),
  WEBHOOK_ALLOWED_PORTS: setting(
    portRanges,
    DEFAULT_WEBHOOK_PORTS,
    "Ports a subscription URL may name, as ports and ranges (443,8443,1024-65535); checked at creation and at send time. Port 0 never.",
  ),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: setting(
    boolean,
    "false",
    "Tests only: let deliveries connect to private and loopback addresses.",
  ),
  WEBHOOK_RESOLVE: setting(resolveMap, undefined, "Tests only: fixed DNS answers for deliveries, host=ip,host2=ip."),
  WEBHOOK_CA_FILE: setting(text, undefined, "Tests only: PEM file of an extra CA trusted for deliveries."),
  WORKER_CONCURRENCY: setting(
    integer(1, 100),
    "5",
    "Jobs the worker runs at once for one tenant; the worker keeps one more slot for tenants with nothing in flight (docs/architecture.md, fairness between tenants).",
  ),
  WORKER_MAX_SENDS: setting(
    integer(1, 10_000),
    "64",
    "Webhook attempts one worker has in flight at once, across its jobs (an event's deliveries send concurrently); one tenant holds at most three quarters of them, the rest stay for the others (docs/architecture.md, fairness between tenants).",
  ),
  WEBHOOK_MAX_SENDS_PER_ENDPOINT: setting(
    integer(1, 1000),
    "10",
    "Webhook attempts one worker has in flight at once to one subscription's endpoint; its further deliveries wait for one of them to end.",
  ),
  WORKER_DEAD_AFTER_SECONDS: setting(
    integer(10, 3600),
    "30",
    "A worker whose heartbeat is this old is dead: the jobs it holds are released to the queue (checked every 10 s) and readiness reports them until then.",
  ),
  WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT: setting(
    integer(1, 10_000),
    "20",
    "Webhook subscriptions a tenant may hold (deleted ones do not count, disabled ones do); one more is 409 WEBHOOK_SUBSCRIPTION_LIMIT_REACHED.",
  ),
  WEBHOOK_LISTEN_SESSIONS_PER_TENANT: setting(
    integer(0, 1000),
    "5",
    "Listen sessions (POST /v1/webhooks/listen-sessions) a tenant may have that have not ended; one more is 409 WEBHOOK_LISTEN_SESSION_LIMIT_REACHED, and 0 turns listen sessions off.",
  ),
  WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES: setting(
    integer(0, 1_000_000),
    "20",
    "A subscription whose deliveries end failed this many times in a row is disabled; 0 turns this rule off.",
  ),
  WEBHOOK_DISABLE_AFTER_FAILING_DAYS: setting(
    decimal(0, 365),
    "5",
    "A subscription whose every attempt has failed for this many days is disabled (fractions allowed); 0 turns this rule off.",
  ),
  WEBHOOK_SECRET_ROTATION_OVERLAP_HOURS: setting(
    decimal(0, 24 * 30),
    "24",
    "After a secret rotation, hours during which deliveries are signed with both the new and the previous secret.",
  ),
  WEBHOOK_MANUAL_SENDS_PER_MINUTE: setting(
    integer(1, 100_000),
    "10",
    "Redeliveries and test events together a tenant's own callers may request in any 60 seconds, and the holder of each portal link apart (429 RATE_LIMITED beyond).",
  ),
  WEBHOOK_RETENTION_DAYS: setting(
    integer(1, 3650),
    "30",
    "Days after creation when final deliveries and their attempts are purged by the purge_webhook_deliveries job; an event goes with the last of its deliveries.",
  ),
  WEBHOOK_PURGE_BATCH_SIZE: setting(
    integer(1, 100_000),
    "1000",
    "Deliveries deleted per statement by the purge job (small batches keep locks short).",
  ),
  HEALTH_WORKER_STALE_SECONDS: setting(
    integer(5, 86400),
    "60",
    "A worker not seen for this long makes health degraded.",
  ),
  HEALTH_QUEUE_LAG_SECONDS: setting(integer(5, 86400), "300", "A due job waiting this long makes health degraded."),
  RATE_LIMIT_PER_MINUTE: setting(
    integer(1, 1_000_000),
    "600",
    "Requests per minute per principal (token subject and tenant) on protected routes.",
  ),
  RATE_LIMIT_ANON_PER_MINUTE: setting(
    integer(1, 1_000_000),
    "120",
    "Requests per minute per client address in each of these buckets: POST /token, the other open routes (JWKS), unknown routes, and requests to protected routes answered 401. A token that verifies is never refused for them.",
  ),
  RATE_LIMIT_CALLBACK_PER_MINUTE: setting(
    integer(1, 1_000_000),
    "600",
    "Requests per minute per client address to the partner callback route, counted apart from the other open routes.",
  ),
  CALLBACK_MAX_BODY_BYTES: setting(
    integer(1024, 1024 * 1024),
    "65536",
    "Largest partner callback body in bytes (413 PAYLOAD_TOO_LARGE beyond, before it is read); other operations take up to 1 MiB.",
  ),
  CALLBACK_MAX_KEYS: setting(
    integer(1, 100_000),
    "1000",
    "Object keys and array items a partner callback's payload may hold, counted at every depth (400 CALLBACK_PAYLOAD_INVALID beyond, before its signature is computed).",
  ),
  CALLBACK_MAX_DEPTH: setting(
    integer(1, 256),
    "32",
    "Nesting depth a partner callback's payload may have (400 CALLBACK_PAYLOAD_INVALID beyond).",
  ),
  CALLBACK_CONCURRENCY_PER_ADDRESS: setting(
    integer(1, 10_000),
    "4",
    "Partner callbacks one client address may have in flight at once (from the first byte to the answer); one more is 429 RATE_LIMITED with Retry-After: 1.",
  ),
  RATE_LIMIT_PROBE_PER_MINUTE: setting(
    integer(1, 1_000_000),
    "600",
    "Requests per minute per client address to /v1/health and /v1/readyz, counted apart from the other open routes.",
  ),
  RATE_LIMIT_STORE: setting(
    rateLimitStore,
    "memory",
    "memory (per process) or postgres (counters in integrator.rate_limits, shared by every replica).",
  ),
  TRUST_PROXY: setting(
    trustProxy,
    "false",
    "Proxies whose X-Forwarded-For names the client address: false, a hop count, or addresses and CIDR ranges (express trust proxy).",
  ),
  HTTP_REQUEST_TIMEOUT_MS: setting(
    integer(1000, 600_000),
    "30000",
    "Longest time to receive a whole request (headers and body); slower requests are answered 408 and closed.",
  ),
  HTTP_HEADERS_TIMEOUT_MS: setting(
    integer(1000, 600_000),
    "10000",
    "Longest time to receive a request's headers; at most HTTP_REQUEST_TIMEOUT_MS.",
  ),
  HTTP_MAX_CONNECTIONS: setting(
    integer(1, 1_000_000),
    "1000",
    "Open connections the API accepts at once; connections beyond are closed at once.",
  ),
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: setting(
    integer(1, 1_000_000),
    "64",
    "Open connections the API accepts at once from one client address (the connection's peer: behind a proxy, the proxy's; IPv6 by /64); connections beyond are closed at once. Behind a proxy, cap per client there (docs/operating.md).",
  ),
  HTTP_FIRST_BYTE_TIMEOUT_MS: setting(
    integer(100, 600_000),
    "3000",
    "A new connection that sends nothing for this long is closed (one that has sent a byte has HTTP_HEADERS_TIMEOUT_MS for its headers).",
  ),
  LOAD_SHED_EVENT_LOOP_DELAY_MS: setting(
    integer(0, 60_000),
    "500",
    "Event-loop delay above which new requests (probes excepted) are refused with 503; 0 turns this check off.",
  ),
  LOAD_SHED_DB_PENDING_ACQUIRES: setting(
    integer(0, 100_000),
    "50",
    "Requests waiting for a database connection above which new requests (probes excepted) are refused with 503; 0 turns this check off.",
  ),
  LOAD_SHED_BODY_MEMORY_MB: setting(
    integer(0, 1_000_000),
    undefined,
    `MiB of request bodies the API holds at once (declared lengths; a streamed body counts as its route's limit) from reading them until their answers are sent; a request whose body would pass it is refused with 503 before it is read, unless no body is held. Default: a ${HEAP_SHARE_FOR_BODIES}th of the V8 heap limit (docs/operating.md, Memory); 0 turns this check off.`,
  ),
  METRICS_PORT: setting(
    integer(0, 65535),
    "0",
    "Port of the Prometheus /metrics endpoint (its own HTTP server); 0 disables it.",
  ),
  METRICS_HOST: setting(
    text,
    "127.0.0.1",
    "Address the /metrics server listens on; it has no authentication, so loopback unless a scraper elsewhere needs it (e.g. 0.0.0.0 in a container).",
  ),
  SHUTDOWN_TIMEOUT_MS: setting(
    integer(0, 600_000),
    "25000",
    "On SIGTERM or SIGINT, how long in-flight requests and jobs may take to finish before they are cut off.",
  ),
  SHUTDOWN_DRAIN_SECONDS: setting(
    integer(0, 300),
    undefined,
    "On SIGTERM or SIGINT, how long the API keeps answering (readiness already 503, every response closing its connection) before it stops accepting connections, so load balancers take it out of rotation first. Default 5 when NODE_ENV=production, else 0.",
  ),
  VALIDATE_RESPONSES: setting(
    boolean,
    undefined,
    "Validate every response against the document (default true when NODE_ENV=test).",
  ),
  PORTAL_SESSION_TTL_MINUTES: setting(
    integer(1, 60),
    "15",
    "Lifetime of a webhook portal link's credential (POST /v1/webhooks/portal-sessions); it is revoked by expiry only.",
  ),
  PORTAL_FRAME_ANCESTORS: setting(
    frameAncestors,
    "'none'",
    "Who may embed the /portal page in a frame (CSP frame-ancestors): 'none', or 'self' and/or origins such as https://dashboard.example.com, space-separated.",
  ),
  API_DOCS: setting(
    boolean,
    undefined,
    "Serve the API description (/openapi.json, /openapi.yaml) and the reference page /docs. Default true, false when NODE_ENV=production.",
  ),
  CORS_ALLOWED_ORIGINS: setting(
    origins,
    "",
    "Comma-separated browser origins (https://app.example.com) allowed to call the API cross-origin; none by default.",
  ),
  SEED_DEMO: setting(
    boolean,
    "true",
    "Seed a demo tenant on the first start of an empty embedded database (never in production).",
  ),
  OTEL_SDK_DISABLED: setting(boolean, "false", "true turns tracing off, whatever the other OTEL_ settings say."),
  OTEL_TRACES_EXPORTER: setting(
    tracesExporter,
    undefined,
    "otlp or none. otlp turns tracing on (to http://localhost:4318 unless an endpoint is set); none turns it off. Unset: tracing is on exactly when an OTLP endpoint below is set.",
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: setting(
    url,
    undefined,
    "Base URL of an OTLP/HTTP collector (spans go to its /v1/traces); setting it turns tracing on (docs/operating.md, tracing). Read by the OpenTelemetry exporter, with OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION and _CERTIFICATE.",
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: setting(
    url,
    undefined,
    "Full URL spans are sent to (used as given, before OTEL_EXPORTER_OTLP_ENDPOINT); setting it turns tracing on.",
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: setting(
    otlpProtocol,
    "http/protobuf",
    "http/protobuf or http/json (gRPC is not supported).",
  ),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: setting(
    otlpProtocol,
    undefined,
    "The protocol for spans, before OTEL_EXPORTER_OTLP_PROTOCOL.",
  ),
  OTEL_SERVICE_NAME: setting(
    text,
    undefined,
    "service.name of the spans. Default by role: integrator-api (--role=api), integrator-worker (--role=worker), integrator (both in one process).",
  ),
  OTEL_TRACES_SAMPLER: setting(
    traceSampler,
    "parentbased_always_on",
    "Which traces are recorded: always_on, always_off, traceidratio, or parentbased_ (follow the caller's traceparent decision, else) always_on, always_off or traceidratio.",
  ),
  OTEL_TRACES_SAMPLER_ARG: setting(
    decimal(0, 1),
    "1",
    "The ratio of traces recorded by the traceidratio samplers, from 0 to 1.",
  ),
  OTEL_BSP_SCHEDULE_DELAY: setting(
    integer(1, 600_000),
    "5000",
    "Milliseconds between two exports of finished spans (and at stop, what is left is sent).",
  ),
  OTEL_BSP_MAX_QUEUE_SIZE: setting(
    integer(1, 1_000_000),
    "2048",
    "Finished spans kept waiting for export; beyond, new ones are dropped (the service never waits for the collector).",
  ),
} satisfies Record<string, Setting<unknown>>;

type Settings = typeof SETTINGS;
type ValueOf<S> = S extends Setting<infer T> ? T : never;
type Parsed = {
  [K in keyof Settings]: Settings[K] extends { fallback: string }
    ? ValueOf<Settings[K]>
    : ValueOf<Settings[K]> | undefined;
};

export interface Config {
  nodeEnv: string;
  isProduction: boolean;
  port: number;
  publicBaseUrl: string;
  /** The iss of the tokens this service issues: PUBLIC_BASE_URL, else http://localhost (never the port). */
  tokenIssuer: string;
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPgPort: number;
  dbPoolMax: number;
  encryptionKey: Buffer | undefined;
  /** How ENCRYPTION_KEY was written (never the key itself), for the start-up log. */
  encryptionKeyEncoding: KeyEncoding | undefined;
  logLevel: string;
  accessTokenTtlSeconds: number;
  maxTokenLifetimeSeconds: number;
  authRefreshSeconds: number;
  login: { freeFailures: number; backoffBaseSeconds: number; backoffMaxSeconds: number };
  hashing: { concurrency: number; queueMax: number };
  selfAudience: string;
  externalAuth:
    | { jwksUrl: string; issuer: string; audience: string | undefined; tenantClaim: string; rolesClaim: string }
    | undefined;
  idempotencyTtlHours: number;
  idempotencyMemoryBytes: number;
  intake: { allowedMimeTypes: string[]; maxFileSizeBytes: number };
  webhooks: {
    maxAttempts: number;
    /** Seconds to wait before retry n at index n − 1 (MAX_RETRIES of them; retryWaits). */
    retryWaitsSeconds: number[];
    /** Seconds from a delivery's first attempt to its last retry, as scheduled: at most MAX_RETRY_WINDOW_SECONDS. */
    retryWindowSeconds: number;
    timeoutMs: number;
    allowedPorts: PortRanges;
    allowPrivateTargets: boolean;
    resolve: Record<string, string>;
    caFile: string | undefined;
    maxSubscriptionsPerTenant: number;
    listenSessionsPerTenant: number;
    disableAfterFailedDeliveries: number;
    disableAfterFailingDays: number;
    secretRotationOverlapHours: number;
    manualSendsPerMinute: number;
    retentionDays: number;
    purgeBatchSize: number;
  };
  workerConcurrency: number;
  /** WORKER_MAX_SENDS and WEBHOOK_MAX_SENDS_PER_ENDPOINT (worker/fairness.ts SendLimits). */
  sends: { perWorker: number; perEndpoint: number };
  workerDeadAfterSeconds: number;
  health: { workerStaleSeconds: number; queueLagSeconds: number };
  rateLimit: {
    perMinute: number;
    anonPerMinute: number;
    callbackPerMinute: number;
    probePerMinute: number;
    store: "memory" | "postgres";
  };
  /** Bounds of the partner callback route, which anyone can reach before a signature is checked. */
  callbacks: { maxBodyBytes: number; maxKeys: number; maxDepth: number; concurrencyPerAddress: number };
  trustProxy: boolean | number | string[];
  /** Whether TRUST_PROXY was given at all (production warns when it was not). */
  trustProxySet: boolean;
  http: {
    requestTimeoutMs: number;
    headersTimeoutMs: number;
    maxConnections: number;
    maxConnectionsPerAddress: number;
    firstByteTimeoutMs: number;
  };
  loadShedding: { eventLoopDelayMs: number; dbPendingAcquires: number };
  /** Bytes of request bodies the API holds at once (LOAD_SHED_BODY_MEMORY_MB); 0 = no bound. */
  bodyMemoryBytes: number;
  metricsPort: number;
  metricsHost: string;
  shutdownTimeoutMs: number;
  /** Seconds the API keeps answering after a stop signal before it closes its listener (the Kubernetes pattern). */
  shutdownDrainSeconds: number;
  validateResponses: boolean;
  /** /openapi.json, /openapi.yaml and /docs are served (API_DOCS; by default everywhere but production). */
  serveApiDocs: boolean;
  corsAllowedOrigins: string[];
  seedDemo: boolean;
  portal: { sessionTtlMinutes: number; frameAncestors: string };
  /** OpenTelemetry tracing (the OTEL_ settings); undefined when it is off, the default. */
  tracing: TracingSettings | undefined;
}

export interface TracingSettings {
  protocol: OtlpProtocol;
  /** OTEL_SERVICE_NAME; undefined: the role's name. */
  serviceName: string | undefined;
  sampler: TraceSampler;
  samplerRatio: number;
  scheduleDelayMs: number;
  maxQueueSize: number;
}

/**
 * Tracing is on when OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint is set, unless OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none. The exporter reads the endpoints (and headers, timeout, compression) itself.
 */
function tracingSettings(v: Parsed): TracingSettings | undefined {
  if (v.OTEL_SDK_DISABLED || v.OTEL_TRACES_EXPORTER === "none") return undefined;
  const endpoint = v.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? v.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (v.OTEL_TRACES_EXPORTER !== "otlp" && endpoint === undefined) return undefined;
  return {
    protocol: v.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? v.OTEL_EXPORTER_OTLP_PROTOCOL,
    serviceName: v.OTEL_SERVICE_NAME,
    sampler: v.OTEL_TRACES_SAMPLER,
    samplerRatio: v.OTEL_TRACES_SAMPLER_ARG,
    scheduleDelayMs: v.OTEL_BSP_SCHEDULE_DELAY,
    maxQueueSize: v.OTEL_BSP_MAX_QUEUE_SIZE,
  };
}

/** Parses and checks every setting; throws ConfigError naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(SETTINGS) as [string, Setting<unknown>][]) {
    const raw = env[name];
    if (raw !== undefined && raw !== "") values[name] = spec.parse(raw, name);
    else if (spec.fallback !== undefined) values[name] = spec.parse(spec.fallback, name);
  }
  const v = values as Parsed;
  const isProduction = v.NODE_ENV === "production";
  if (v.AUTH_JWKS_URL && !v.AUTH_ISSUER) throw new ConfigError("AUTH_ISSUER is required when AUTH_JWKS_URL is set");
  if (isProduction && !v.ENCRYPTION_KEY) throw new ConfigError("ENCRYPTION_KEY is required when NODE_ENV=production");
  if (isProduction && !v.PUBLIC_BASE_URL)
    throw new ConfigError("PUBLIC_BASE_URL is required when NODE_ENV=production (it is the token issuer)");
  if (v.ACCESS_TOKEN_TTL_SECONDS > v.AUTH_MAX_TOKEN_LIFETIME_SECONDS)
    throw new ConfigError("ACCESS_TOKEN_TTL_SECONDS must not exceed AUTH_MAX_TOKEN_LIFETIME_SECONDS");
  if (v.HTTP_HEADERS_TIMEOUT_MS > v.HTTP_REQUEST_TIMEOUT_MS)
    throw new ConfigError("HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS");
  if (v.WEBHOOK_RETRY_BASE_SECONDS !== undefined && env.WEBHOOK_RETRY_SCHEDULE)
    throw new ConfigError("Set WEBHOOK_RETRY_SCHEDULE or WEBHOOK_RETRY_BASE_SECONDS, not both");
  if (v.WEBHOOK_RETRY_WINDOW !== undefined && env.MAX_DELIVERY_ATTEMPTS)
    throw new ConfigError(
      "Set MAX_DELIVERY_ATTEMPTS or WEBHOOK_RETRY_WINDOW, not both: the window decides how many attempts a delivery gets",
    );
  const retryWaitsSeconds = retryWaits(v.WEBHOOK_RETRY_SCHEDULE, v.WEBHOOK_RETRY_BASE_SECONDS);
  const maxAttempts = retryAttempts(retryWaitsSeconds, {
    maxAttempts: v.MAX_DELIVERY_ATTEMPTS,
    windowSeconds: v.WEBHOOK_RETRY_WINDOW,
    schedule:
      v.WEBHOOK_RETRY_BASE_SECONDS === undefined
        ? `WEBHOOK_RETRY_SCHEDULE=${env.WEBHOOK_RETRY_SCHEDULE || (SETTINGS.WEBHOOK_RETRY_SCHEDULE.fallback ?? "")}`
        : `WEBHOOK_RETRY_BASE_SECONDS=${v.WEBHOOK_RETRY_BASE_SECONDS}`,
  });
  if (isProduction && (v.WEBHOOK_ALLOW_PRIVATE_TARGETS || v.WEBHOOK_RESOLVE || v.WEBHOOK_CA_FILE)) {
    throw new ConfigError(
      "WEBHOOK_ALLOW_PRIVATE_TARGETS, WEBHOOK_RESOLVE and WEBHOOK_CA_FILE are for tests and refused when NODE_ENV=production",
    );
  }
  return {
    nodeEnv: v.NODE_ENV,
    isProduction,
    port: v.PORT,
    publicBaseUrl: v.PUBLIC_BASE_URL ?? `http://localhost:${v.PORT}`,
    tokenIssuer: v.PUBLIC_BASE_URL ?? "http://localhost",
    databaseUrl: v.DATABASE_URL,
    dataDir: path.resolve(v.DATA_DIR),
    embeddedPgPort: v.EMBEDDED_PG_PORT,
    dbPoolMax: v.DB_POOL_MAX,
    encryptionKey: v.ENCRYPTION_KEY?.key,
    encryptionKeyEncoding: v.ENCRYPTION_KEY?.encoding,
    logLevel: v.LOG_LEVEL,
    accessTokenTtlSeconds: v.ACCESS_TOKEN_TTL_SECONDS,
    maxTokenLifetimeSeconds: v.AUTH_MAX_TOKEN_LIFETIME_SECONDS,
    authRefreshSeconds: v.AUTH_REFRESH_SECONDS,
    login: {
      freeFailures: v.AUTH_LOGIN_FREE_FAILURES,
      backoffBaseSeconds: v.AUTH_LOGIN_BACKOFF_BASE_SECONDS,
      backoffMaxSeconds: v.AUTH_LOGIN_BACKOFF_MAX_SECONDS,
    },
    hashing: { concurrency: v.AUTH_HASH_CONCURRENCY, queueMax: v.AUTH_HASH_QUEUE_MAX },
    selfAudience: v.AUTH_AUDIENCE_SELF,
    externalAuth: v.AUTH_JWKS_URL
      ? {
          jwksUrl: v.AUTH_JWKS_URL,
          issuer: v.AUTH_ISSUER as string,
          audience: v.AUTH_AUDIENCE,
          tenantClaim: v.AUTH_TENANT_CLAIM,
          rolesClaim: v.AUTH_ROLES_CLAIM,
        }
      : undefined,
    idempotencyTtlHours: v.API_IDEMPOTENCY_TTL_HOURS,
    idempotencyMemoryBytes: Math.floor(v.API_IDEMPOTENCY_MEMORY_MB * 1024 * 1024),
    intake: {
      allowedMimeTypes: v.INTAKE_ALLOWED_MIME_TYPES.map((type) => type.toLowerCase()),
      maxFileSizeBytes: v.INTAKE_MAX_FILE_SIZE_BYTES,
    },
    webhooks: {
      maxAttempts,
      retryWaitsSeconds,
      retryWindowSeconds: retryWindowSeconds(maxAttempts, retryWaitsSeconds),
      timeoutMs: v.WEBHOOK_TIMEOUT_MS,
      allowedPorts: v.WEBHOOK_ALLOWED_PORTS,
      allowPrivateTargets: v.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      resolve: v.WEBHOOK_RESOLVE ?? {},
      caFile: v.WEBHOOK_CA_FILE,
      maxSubscriptionsPerTenant: v.WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT,
      listenSessionsPerTenant: v.WEBHOOK_LISTEN_SESSIONS_PER_TENANT,
      disableAfterFailedDeliveries: v.WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES,
      disableAfterFailingDays: v.WEBHOOK_DISABLE_AFTER_FAILING_DAYS,
      secretRotationOverlapHours: v.WEBHOOK_SECRET_ROTATION_OVERLAP_HOURS,
      manualSendsPerMinute: v.WEBHOOK_MANUAL_SENDS_PER_MINUTE,
      retentionDays: v.WEBHOOK_RETENTION_DAYS,
      purgeBatchSize: v.WEBHOOK_PURGE_BATCH_SIZE,
    },
    workerConcurrency: v.WORKER_CONCURRENCY,
    sends: { perWorker: v.WORKER_MAX_SENDS, perEndpoint: v.WEBHOOK_MAX_SENDS_PER_ENDPOINT },
    workerDeadAfterSeconds: v.WORKER_DEAD_AFTER_SECONDS,
    health: { workerStaleSeconds: v.HEALTH_WORKER_STALE_SECONDS, queueLagSeconds: v.HEALTH_QUEUE_LAG_SECONDS },
    rateLimit: {
      perMinute: v.RATE_LIMIT_PER_MINUTE,
      anonPerMinute: v.RATE_LIMIT_ANON_PER_MINUTE,
      callbackPerMinute: v.RATE_LIMIT_CALLBACK_PER_MINUTE,
      probePerMinute: v.RATE_LIMIT_PROBE_PER_MINUTE,
      store: v.RATE_LIMIT_STORE,
    },
    callbacks: {
      maxBodyBytes: v.CALLBACK_MAX_BODY_BYTES,
      maxKeys: v.CALLBACK_MAX_KEYS,
      maxDepth: v.CALLBACK_MAX_DEPTH,
      concurrencyPerAddress: v.CALLBACK_CONCURRENCY_PER_ADDRESS,
    },
    trustProxy: v.TRUST_PROXY,
    trustProxySet: env.TRUST_PROXY !== undefined && env.TRUST_PROXY !== "",
    http: {
      requestTimeoutMs: v.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeoutMs: v.HTTP_HEADERS_TIMEOUT_MS,
      maxConnections: v.HTTP_MAX_CONNECTIONS,
      maxConnectionsPerAddress: v.HTTP_MAX_CONNECTIONS_PER_ADDRESS,
      firstByteTimeoutMs: v.HTTP_FIRST_BYTE_TIMEOUT_MS,
    },
    loadShedding: {
      eventLoopDelayMs: v.LOAD_SHED_EVENT_LOOP_DELAY_MS,
      dbPendingAcquires: v.LOAD_SHED_DB_PENDING_ACQUIRES,
    },
    bodyMemoryBytes:
      v.LOAD_SHED_BODY_MEMORY_MB === undefined
        ? Math.floor((Math.round(v8.getHeapStatistics().heap_size_limit / 2 ** 20) * 2 ** 20) / HEAP_SHARE_FOR_BODIES)
        : v.LOAD_SHED_BODY_MEMORY_MB * 2 ** 20,
    metricsPort: v.METRICS_PORT,
    metricsHost: v.METRICS_HOST,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    shutdownDrainSeconds: v.SHUTDOWN_DRAIN_SECONDS ?? (isProduction ? 5 : 0),
    validateResponses: v.VALIDATE_RESPONSES ?? v.NODE_ENV === "test",
    serveApiDocs: v.API_DOCS ?? !isProduction,
    corsAllowedOrigins: v.CORS_ALLOWED_ORIGINS,
    seedDemo: v.SEED_DEMO && !isProduction,
    portal: { sessionTtlMinutes: v.PORTAL_SESSION_TTL_MINUTES, frameAncestors: v.PORTAL_FRAME_ANCESTORS },
    tracing: tracingSettings(v),
  };
}
