// Structured logs: pino JSON lines on stdout, one per finished request (pino-http) plus whatever the
// service reports. Credentials never reach a log line: request lines carry a whitelist of request
// fields with sensitive query parameters masked, and any logged object has its sensitive keys
// censored by pino's redaction, whatever their depth up to five levels.
import type { IncomingMessage, ServerResponse } from "node:http";
import { pino, type DestinationStream, type Logger } from "pino";
import { pinoHttp, type HttpLogger } from "pino-http";

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
  // pino's own stdout destination writes synchronously, so nothing is lost when the process exits.
  return options.destination ? pino(settings, options.destination) : pino(settings);
}

/** The URL with the values of sensitive query parameters masked (signature, access_token, ...). */
export function safeUrl(url: string): string {
  const mark = url.indexOf("?");
  if (mark < 0) return url;
  const pairs = url
    .slice(mark + 1)
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
    });
  return `${url.slice(0, mark)}?${pairs.join("&")}`;
}

export interface RequestLogContext<Req extends IncomingMessage, Res extends ServerResponse> {
  requestId(res: Res): string;
  operationId(res: Res): string | undefined;
  tenant(req: Req): string | undefined;
  /** Probes answered 2xx log at debug, so a monitor's polling does not flood the info level. */
  isProbe(res: Res): boolean;
}

/** pino-http middleware writing one line per finished request. */
export function requestLogger<Req extends IncomingMessage, Res extends ServerResponse>(
  logger: Logger,
  context: RequestLogContext<Req, Res>,
): HttpLogger<Req, Res> {
  return pinoHttp<Req, Res>({
    // Request lines carry only whitelisted fields (the req serializer below, a masked URL), so they
    // need no deep wildcard redaction, which costs more than the rest of the line on a busy path.
    logger: logger.child({}, { redact: { paths: ["err.body", "err.rawBody"], censor: REDACTED } }),
    genReqId: (_req, res) => context.requestId(res),
    quietReqLogger: true,
    quietResLogger: true,
    customAttributeKeys: { reqId: "request_id", responseTime: "duration_ms" },
    serializers: {
      req: (req: {
        method?: string;
        url?: string;
        remoteAddress?: string;
        headers?: Record<string, string | undefined>;
      }) => ({
        method: req.method,
        url: safeUrl(req.url ?? ""),
        remote_address: req.remoteAddress,
        user_agent: req.headers?.["user-agent"],
      }),
    },
    customLogLevel: (_req, res, error) => {
      if (res.statusCode === 501) return "warn";
      if (error || (res.statusCode >= 500 && res.statusCode !== 503)) return "error";
      if (res.statusCode === 503 || res.statusCode === 429)
        return context.isProbe(res) && res.statusCode === 503 ? "info" : "warn";
      return context.isProbe(res) && res.statusCode < 400 ? "debug" : "info";
    },
    customSuccessMessage: (req, res) => `${req.method} ${context.operationId(res) ?? "unmatched"} ${res.statusCode}`,
    customErrorMessage: (req, res) => `${req.method} ${context.operationId(res) ?? "unmatched"} ${res.statusCode}`,
    customSuccessObject: (req, res, fields: { duration_ms: number }) => ({
      req,
      tenant: context.tenant(req),
      operationId: context.operationId(res),
      status: res.statusCode,
      duration_ms: fields.duration_ms,
      ...(res.writableFinished ? {} : { aborted: true }),
    }),
    customErrorObject: (req, res, _error, fields: { duration_ms: number }) => ({
      req,
      tenant: context.tenant(req),
      operationId: context.operationId(res),
      status: res.statusCode,
      duration_ms: fields.duration_ms,
    }),
  });
}
