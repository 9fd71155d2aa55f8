// Structured logs: pino JSON lines on stdout, one per finished request (requestLogger below) plus whatever the
// service reports. Credentials never reach a log line: request lines carry a whitelist of request
// fields with sensitive query parameters masked (safeUrl, which trace spans use too), and any logged
// object has its sensitive keys censored by pino's redaction, whatever their depth up to five levels.
import type { IncomingMessage, ServerResponse } from "node:http";
import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger } from "pino";

export const REDACTED = "[Redacted]";

/** Keys whose values are credentials or signatures, wherever they appear in a logged object. */
const SENSITIVE_KEYS = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "password",
  "client_secret",
  "secret",
  "callback_secret",
  "secret_encrypted",
  "signature",
  "x-callback-signature",
  "x-service-review-signature",
  "access_token",
  "refresh_token",
  "assertion",
  "encryption_key",
];

/** Query parameters masked in logged URLs. */
const SENSITIVE_QUERY = new Set([
  "signature",
  "access_token",
  "refresh_token",
  "token",
  "assertion",
  "password",
  "client_secret",
  "code",
]);

function redactPaths(): string[] {
  const paths: string[] = [];
  for (const key of SENSITIVE_KEYS) {
    const leaf = /^[a-z_]+$/.test(key) ? `.${key}` : `["${key}"]`;
    for (let depth = 0; depth <= 4; depth++)
      paths.push(`${Array(depth).fill("*").join(".")}${leaf}`.replace(/^\./, ""));
  }
  // An error raised while parsing a body carries the raw body text.
  paths.push("err.body", "err.rawBody");
  return paths;
}

export interface LoggerOptions {
  level: string;
  /** Where the JSON lines go; stdout by default (tests pass a stream to read them back). */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const settings = {
    level: options.level,
    base: { service: "integrator-api" },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: redactPaths(), censor: REDACTED },
  };
  // pino's own stdout destination writes asynchronously and flushes what is pending when the process exits;
  // synchronous writes cost a submit more CPU (docs/performance.md, what did not pay).
  return options.destination ? pino(settings, options.destination) : pino(settings);
}

/** The URL with the values of sensitive query parameters masked (signature, access_token, ...). */
export function safeUrl(url: string): string {
  const mark = url.indexOf("?");
  if (mark < 0) return url;
  return `${url.slice(0, mark)}?${safeQuery(url.slice(mark + 1))}`;
}

/**
 * A query string (without its `?`) with the values of sensitive parameters masked, as request lines show
 * it; trace spans record the query through this too (foundation/tracing-sdk.ts).
 */
export function safeQuery(query: string): string {
  return query
    .split("&")
    .map((pair) => {
      const equals = pair.indexOf("=");
      const rawName = equals < 0 ? pair : pair.slice(0, equals);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, " "));
      } catch {
        // A malformed escape: judge the name as it was sent.
      }
      return SENSITIVE_QUERY.has(name.trim().toLowerCase()) ? `${rawName}=${REDACTED}` : pair;
    })
    .join("&");
}

export interface RequestLogContext<Req extends IncomingMessage, Res extends ServerResponse> {
  requestId(res: Res): string;
  operationId(res: Res): string | undefined;
  tenant(req: Req): string | undefined;
  /** Probes answered 2xx log at debug, so a monitor's polling does not flood the info level. */
  isProbe(res: Res): boolean;
}

/**
 * Middleware writing one line per finished (or aborted) request. Written directly rather than with
 * pino-http, which binds two child loggers (serializers and redaction compiled into each) to every
 * request even when nothing is written: here one plain object per request goes to one logger.
 */
export function requestLogger<Req extends IncomingMessage, Res extends ServerResponse>(
  logger: Logger,
  context: RequestLogContext<Req, Res>,
): (req: Req, res: Res, next: () => void) => void {
  // Request lines carry only whitelisted fields (a masked URL, no headers but the user agent), so they
  // need no deep wildcard redaction, which costs more than the rest of the line on a busy path.
  const lines = logger.child({}, { redact: { paths: ["err.body", "err.rawBody"], censor: REDACTED } });
  const levelOf = (req: Req, res: Res): "debug" | "info" | "warn" | "error" => {
    const status = res.statusCode;
    if (status === 501) return "warn";
    if (status >= 500 && status !== 503) return "error";
    if (status === 503 || status === 429) return context.isProbe(res) && status === 503 ? "info" : "warn";
    return context.isProbe(res) && status < 400 ? "debug" : "info";
  };
  return (req, res, next) => {
    const started = Date.now();
    let written = false;
    const write = () => {
      if (written) return;
      written = true;
      const level = levelOf(req, res);
      if (!lines.isLevelEnabled(level)) return;
      const status = res.statusCode;
      const operationId = context.operationId(res);
      const url = (req as { originalUrl?: string }).originalUrl ?? req.url ?? "";
      lines[level](
        {
          request_id: context.requestId(res),
          req: {
            method: req.method,
            url: safeUrl(url),
            remote_address: req.socket.remoteAddress,
            user_agent: req.headers["user-agent"],
          },
          tenant: context.tenant(req),
          operationId,
          status,
          duration_ms: Date.now() - started,
          ...(res.writableFinished || status >= 500 ? {} : { aborted: true }),
        },
        `${req.method} ${operationId ?? "unmatched"} ${status}`,
      );
    };
    res.once("finish", write);
    res.once("close", write);
    next();
  };
}
