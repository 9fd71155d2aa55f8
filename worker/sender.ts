// One HTTPS POST of a webhook delivery, with the send-time SSRF rule of docs/decisions.md §5: the host is
// resolved once, every address is checked against the blocked ranges, and the connection goes to a
// checked address (no second lookup). Redirects are never followed; the whole attempt — resolution,
// connect, TLS, the answer's headers and reading its body — runs under one timeout. The answer's status,
// headers and first 4 KiB of body are kept for the tenant to read (SendOutcome.response), and what was
// sent (requestHeaders). An answer Node's parser refuses for a control character in a header value is
// still the receiver's answer: its status line decides (readRefusedHead). What a failed attempt tells the
// tenant is a coarse class and a sentence (FAILURE), never an address, a port's state or a TLS error code:
// those would make the service a port scanner of public hosts. The detail goes to our logs only
// (SendOutcome.detail).
import dns from "node:dns";
import fs from "node:fs";
import https from "node:https";
import http from "node:http";
import net from "node:net";
import tls from "node:tls";
import {
  checkWebhookUrl,
  isBlockedAddress,
  parseIpLiteral,
  type PortRanges,
  type UrlVerdict,
} from "../foundation/url-safety.ts";
import { boundedMemo } from "./memo.ts";
import type { Config } from "../foundation/config.ts";
import { errorMessage } from "../foundation/error-message.ts";
import type { AttemptErrorClass } from "../db/webhooks/views.ts";

/** The most of an answer's body kept (and read): its first 4 KiB. */
export const MAX_RESPONSE_BODY_BYTES = 4096;
/** The most of an answer's headers kept: 4 KiB of names and values (UTF-8), whole headers in the order received. */
export const MAX_RESPONSE_HEADER_BYTES = 4096;
/**
 * The entry that ends a headers object some headers were left out of (MAX_RESPONSE_HEADER_BYTES). A header's
 * name is a token, which holds no parentheses, so no answer's header can be called this.
 */
export const HEADERS_LEFT_OUT = "(left out)";
const MAX_ERROR_LENGTH = 500;

export interface SendSettings {
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** WEBHOOK_ALLOWED_PORTS, checked again at send time. */
  allowedPorts: PortRanges;
  /** Fixed answers instead of DNS, by lowercase host name (tests only). */
  resolve: Record<string, string>;
  /** Node's default roots plus WEBHOOK_CA_FILE, built once (parsing ~150 roots per connection is slow); undefined means the defaults. */
  secureContext: tls.SecureContext | undefined;
  /** Kept-alive connections per checked target (see ConnectionPools); absent: a fresh connection per attempt. */
  pools?: ConnectionPools;
  /** The URL rule (checkWebhookUrl), memoized by URL text; absent: checked afresh each attempt. */
  checkUrl?: (url: string) => UrlVerdict;
}

const MAX_POOLS = 200;
/** Connections to one target at once, unless the worker sends more at once (sendSettings). */
const DEFAULT_SOCKETS_PER_TARGET = 20;
/** Idle kept-alive connections close after this (sooner when the receiver announces a shorter Keep-Alive timeout). */
const IDLE_CONNECTION_MS = 4000;

/**
 * Kept-alive HTTPS connections (and TLS sessions), one pool per checked target: the host name, the
 * port and the exact set of addresses the attempt's own resolution produced and the SSRF rule
 * checked. An attempt only takes a connection from the pool of its own check's result, so a pooled
 * connection is never reused for an address that was not checked for that attempt (a host that now
 * resolves elsewhere gets another pool and new connections). The least recently used pools close
 * beyond MAX_POOLS.
 */
export class ConnectionPools {
  private readonly agents = new Map<string, https.Agent>();
  private readonly maxSocketsPerTarget: number;

  constructor(maxSocketsPerTarget = DEFAULT_SOCKETS_PER_TARGET) {
    this.maxSocketsPerTarget = maxSocketsPerTarget;
  }

  agentFor(host: string, port: string, addresses: dns.LookupAddress[]): https.Agent {
    const key = `${host.toLowerCase()}|${port}|${addresses
      .map((entry) => entry.address)
      .sort()
      .join(",")}`;
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key);
    } else {
      agent = new https.Agent({
        keepAlive: true,
        timeout: IDLE_CONNECTION_MS,
        maxSockets: this.maxSocketsPerTarget,
        // As many kept idle as were open at once: a burst to one host (an event's deliveries) finds its
        // connections again in the next burst instead of opening and handshaking them anew.
        maxFreeSockets: this.maxSocketsPerTarget,
        scheduling: "lifo",
      });
      if (this.agents.size >= MAX_POOLS) {
        const [oldestKey, oldest] = this.agents.entries().next().value as [string, https.Agent];
        this.agents.delete(oldestKey);
        oldest.destroy();
      }
    }
    this.agents.set(key, agent);
    return agent;
  }

  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

/**
 * What a failed attempt shows the tenant: its class (an attempt's error_class), the short text that is the
 * delivery's error_message, and the sentence that is the attempt's error_message (the document lists
 * them). An HTTP answer outside 2xx is "HTTP status NNN" (FAILURE.httpStatus); a timeout names the limit.
 */
export const FAILURE = {
  timeout: (timeoutMs: number): Failure => ({
    errorClass: "timeout",
    message: "Timeout",
    sentence: `The endpoint sent no answer within ${timeoutMs % 1000 === 0 ? `${timeoutMs / 1000} s` : `${timeoutMs} ms`} (the attempt's time limit).`,
  }),
  connection: {
    errorClass: "connection_failed",
    message: "Connection failed",
    sentence: "The connection to the endpoint was refused, reset or could not be made.",
  },
  tls: {
    errorClass: "tls_failed",
    message: "TLS failed",
    sentence:
      "The TLS handshake with the endpoint failed, or its certificate was not valid for its host name or not trusted.",
  },
  dns: {
    errorClass: "connection_failed",
    message: "DNS lookup failed",
    sentence: "The endpoint's host name could not be resolved to an address.",
  },
  invalidResponse: {
    errorClass: "connection_failed",
    message: "Invalid HTTP response",
    sentence:
      "The endpoint's answer could not be read as HTTP: its status line, a header line or its framing (Content-Length, Transfer-Encoding) is malformed, or its headers pass 16 KiB.",
  },
  targetNotAllowed: {
    errorClass: "connection_failed",
    message: "Target not allowed",
    sentence:
      "The endpoint is not allowed at send time: its host resolves to a private, loopback or reserved address, or its port is not allowed.",
  },
  interrupted: {
    errorClass: "connection_failed",
    message: "Interrupted: the worker stopped",
    sentence: "The attempt was cut short because the service's worker was stopping.",
  },
  other: {
    errorClass: "connection_failed",
    message: "Request failed",
    sentence: "The request to the endpoint failed before an answer arrived.",
  },
  httpStatus: (status: number): Failure => {
    const reason = http.STATUS_CODES[status];
    const answered = `The endpoint answered ${status}${reason ? ` ${reason}` : ""}`;
    return {
      errorClass: "http_status",
      message: `HTTP status ${status}`,
      sentence:
        status >= 300 && status < 400
          ? `${answered}, a redirect, which is not followed; only a 2xx answer counts as delivered.`
          : `${answered}; only a 2xx answer counts as delivered.`,
    };
  },
} as const satisfies Record<string, Failure | ((value: number) => Failure)>;

/** A failed attempt as the tenant sees it: its class (the document's enum), the short text and the sentence. */
export interface Failure {
  errorClass: AttemptErrorClass;
  /** The delivery's error_message. */
  message: string;
  /** The attempt's error_message. */
  sentence: string;
}

/** What the endpoint answered, as far as the attempt read it. */
export interface AnswerExcerpt {
  status: number;
  /**
   * Names in lowercase; a repeated header's values joined with ", "; at most MAX_RESPONSE_HEADER_BYTES of
   * them, then HEADERS_LEFT_OUT saying how many were not kept.
   */
  headers: Record<string, string>;
  /** The first MAX_RESPONSE_BODY_BYTES of the body as UTF-8 text (no NUL characters). */
  body: string;
  /** The body went on past what was read (longer than MAX_RESPONSE_BODY_BYTES, or cut by the time limit). */
  bodyTruncated: boolean;
}

/** How an attempt ended, as the tenant sees it. */
export type Verdict =
  | { delivered: true; responseCode: number }
  | {
      delivered: false;
      responseCode: number | null;
      /** The coarse class the tenant sees in the attempt history (FAILURE). */
      errorClass: AttemptErrorClass;
      /** The short text the tenant sees as the delivery's error_message (FAILURE). */
      errorMessage: string;
      /** The sentence the tenant sees as the attempt's error_message (FAILURE). */
      errorSentence: string;
      /** What happened exactly, for our logs only. */
      detail: string;
    };

export type SendOutcome = Verdict & {
  /** The headers sent (or that would have been, when the request never went out). */
  requestHeaders: Record<string, string>;
  /** The answer, when one arrived. */
  response: AnswerExcerpt | null;
  /** From the start of the attempt to the answer's status line (or the failure). */
  durationMs: number;
};

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

/** The send settings from the configuration; reads WEBHOOK_CA_FILE once. Connections are kept alive per checked target. */
/**
 * `maxSendsAtOnce`: the most attempts the worker has in flight at once (WORKER_MAX_SENDS). A pool opens as
 * many connections to one target, so an attempt the worker let go never queues inside the pool behind
 * others to the same host, however long those hang (its time limit would run out there, another tenant's
 * too); idle, they close after IDLE_CONNECTION_MS.
 */
export function sendSettings(webhooks: Config["webhooks"], maxSendsAtOnce = DEFAULT_SOCKETS_PER_TARGET): SendSettings {
  return {
    pools: new ConnectionPools(Math.max(DEFAULT_SOCKETS_PER_TARGET, maxSendsAtOnce)),
    checkUrl: boundedMemo((url: string) => checkWebhookUrl(url, { allowedPorts: webhooks.allowedPorts })),
    timeoutMs: webhooks.timeoutMs,
    allowPrivateTargets: webhooks.allowPrivateTargets,
    allowedPorts: webhooks.allowedPorts,
    resolve: webhooks.resolve,
    secureContext: webhooks.caFile
      ? tls.createSecureContext({ ca: [...tls.rootCertificates, fs.readFileSync(webhooks.caFile, "utf8")] })
      : undefined,
  };
}

class AttemptFailed extends Error {
  override name = "AttemptFailed";
  readonly failure: Failure;
  constructor(failure: Failure, detail: string) {
    super(detail);
    this.failure = failure;
  }
}

/** A reused kept-alive connection failed before the answer began; `cause` is the socket's error. */
class StaleConnection extends Error {
  override name = "StaleConnection";
}

export function failed(failure: Failure, detail: string, responseCode: number | null = null): Verdict {
  return {
    delivered: false,
    responseCode,
    errorClass: failure.errorClass,
    errorMessage: failure.message.slice(0, MAX_ERROR_LENGTH),
    errorSentence: failure.sentence.slice(0, MAX_ERROR_LENGTH),
    detail,
  };
}

async function resolveHost(host: string, settings: SendSettings): Promise<dns.LookupAddress[]> {
  const literal = parseIpLiteral(host);
  if (literal !== undefined) return [{ address: literal, family: net.isIP(literal) }];
  const fixed = settings.resolve[host.toLowerCase().replace(/\.$/, "")];
  if (fixed !== undefined) return [{ address: fixed, family: net.isIP(fixed) }];
  try {
    return await dns.promises.lookup(host, { all: true, verbatim: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new AttemptFailed(FAILURE.dns, `DNS lookup of ${host} failed (${code ?? "error"})`);
  }
}

// The coarse class of an error, and the detail for the logs.
function classify(error: unknown): { failure: Failure; detail: string } {
  if (error instanceof AttemptFailed) return { failure: error.failure, detail: error.message };
  if (error instanceof StaleConnection) return classify(error.cause);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const detail = `${code ?? (error instanceof Error ? error.name : "unknown error")}: ${errorMessage(error)}`;
  switch (code) {
    case "ECONNREFUSED":
    case "ECONNRESET":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "EPIPE":
    case "ETIMEDOUT":
    case "EADDRNOTAVAIL":
      return { failure: FAILURE.connection, detail };
    default:
      break;
  }
  // llhttp's refusals of what the endpoint sent (HPE_INVALID_STATUS, HPE_HEADER_OVERFLOW, ...).
  if (typeof code === "string" && code.startsWith("HPE_")) return { failure: FAILURE.invalidResponse, detail };
  if (
    typeof code === "string" &&
    /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_|ERR_TLS_CERT)/.test(code)
  )
    return { failure: FAILURE.tls, detail };
  return { failure: FAILURE.other, detail };
}

/**
 * Sends one attempt. Never throws: every failure (URL rule, port, resolution, blocked address,
 * connection, TLS, timeout, non-2xx answer) is a failed outcome with its class, sentence and detail.
 * Once the answer's status line has arrived the outcome is decided: the time left (and a worker
 * stopping) only cut the reading of its body short. `shutdown` (the worker's long-lived abort signal)
 * cuts the attempt short; its listener is removed when the attempt ends, so attempts leave nothing
 * behind on it.
 */
export async function sendWebhook(
  request: WebhookRequest,
  settings: SendSettings,
  shutdown?: AbortSignal,
): Promise<SendOutcome> {
  const started = performance.now();
  const requestHeaders = { ...request.headers, "Content-Length": String(Buffer.byteLength(request.body)) };
  let answeredAt: number | undefined;
  const outcome = (verdict: Verdict, response: AnswerExcerpt | null = null): SendOutcome => ({
    ...verdict,
    requestHeaders,
    response,
    durationMs: (answeredAt ?? performance.now()) - started,
  });
  const verdict = settings.checkUrl
    ? settings.checkUrl(request.url)
    : checkWebhookUrl(request.url, { allowedPorts: settings.allowedPorts });
  if (!verdict.ok) return outcome(failed(FAILURE.targetNotAllowed, `URL rule ${verdict.rule}: ${verdict.message}`));
  const { url, host } = verdict;
  const deadline = Date.now() + settings.timeoutMs;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onShutdown: (() => void) | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // After the status line only the body is still being read: post() ends that at the deadline itself.
      if (answeredAt !== undefined) return;
      reject(new AttemptFailed(FAILURE.timeout(settings.timeoutMs), `Timed out after ${settings.timeoutMs} ms`));
      abort.abort();
    }, settings.timeoutMs);
    // A worker shutting down cuts the attempt short; it is recorded as failed and retried. After the
    // status line, only the body's reading is cut short and the answer stands.
    onShutdown = () => {
      if (answeredAt === undefined)
        reject(new AttemptFailed(FAILURE.interrupted, "Aborted: the worker is shutting down"));
      abort.abort();
    };
    if (shutdown?.aborted) onShutdown();
    else shutdown?.addEventListener("abort", onShutdown, { once: true });
  });
  try {
    const addresses = await Promise.race([resolveHost(host, settings), timedOut]);
    if (addresses.length === 0) return outcome(failed(FAILURE.dns, `Host ${host} has no addresses`));
    if (!settings.allowPrivateTargets && addresses.some((entry) => isBlockedAddress(entry.address))) {
      return outcome(
        failed(
          FAILURE.targetNotAllowed,
          `Host ${host} resolves to a private, loopback, link-local or reserved address; not connecting`,
        ),
      );
    }
    const answered = () => {
      answeredAt ??= performance.now();
    };
    const attempt = (pooled: boolean) =>
      post(
        url,
        host,
        addresses,
        { ...request, headers: requestHeaders },
        settings,
        abort.signal,
        deadline,
        pooled,
        answered,
      );
    // A kept-alive connection the receiver closed just as it was reused fails before any answer: once,
    // the attempt goes again on a new connection (to the same checked addresses).
    const answer = await Promise.race([
      attempt(settings.pools !== undefined).catch((error: unknown) => {
        if (!(error instanceof StaleConnection) || Date.now() >= deadline) throw error;
        return attempt(false);
      }),
      timedOut,
    ]);
    return outcome(verdictOf(answer.status), answer);
  } catch (error) {
    const { failure, detail } = classify(error);
    return outcome(failed(failure, detail));
  } finally {
    clearTimeout(timer);
    if (onShutdown) shutdown?.removeEventListener("abort", onShutdown);
  }
}

export function verdictOf(status: number): Verdict {
  if (status >= 200 && status < 300) return { delivered: true, responseCode: status };
  if (status >= 300 && status < 400) return failed(FAILURE.httpStatus(status), "redirect not followed", status);
  return failed(FAILURE.httpStatus(status), `HTTP ${status}`, status);
}

/**
 * The answer's headers by lowercase name, a repeated header's values joined with ", ", kept whole in the order
 * received while their names and values fit in MAX_RESPONSE_HEADER_BYTES; one that does not fit is left out,
 * and HEADERS_LEFT_OUT then says how many were.
 */
export function headersOf(rawHeaders: string[]): Record<string, string> {
  const joined = new Map<string, string>();
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const name = (rawHeaders[index] ?? "").toLowerCase();
    const value = rawHeaders[index + 1] ?? "";
    const before = joined.get(name);
    joined.set(name, before === undefined ? value : `${before}, ${value}`);
  }
  const headers: Record<string, string> = {};
  let bytes = 0;
  let leftOut = 0;
  for (const [name, value] of joined) {
    const size = Buffer.byteLength(name) + Buffer.byteLength(value);
    if (bytes + size > MAX_RESPONSE_HEADER_BYTES) {
      leftOut++;
      continue;
    }
    bytes += size;
    headers[name] = value;
  }
  if (leftOut > 0)
    headers[HEADERS_LEFT_OUT] =
      `${leftOut} ${leftOut === 1 ? "header" : "headers"} not kept: the answer's headers passed ${MAX_RESPONSE_HEADER_BYTES} bytes`;
  return headers;
}

/**
 * The parser's refusals of a character in a header line (llhttp: "Invalid header value char", and a CR not
 * followed by LF); only these are read again by readRefusedHead. A refusal of the answer's framing (two
 * lengths, a length that is no number) is never read around.
 */
const HEADER_CHARACTER_REFUSALS = new Set(["HPE_INVALID_HEADER_TOKEN", "HPE_LF_EXPECTED"]);
/** A header name: an HTTP token (RFC 9110 §5.1). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** HTTP/1.x status line: the version, a three-digit status, an optional reason phrase. */
const STATUS_LINE = /^HTTP\/1\.[01] ([1-5][0-9]{2})(?: [^\r\n]*)?$/;
/** Control characters but the tab, which RFC 9110 §5.5 forbids in a field value. */
const VALUE_CONTROLS = /[\u0000-\u0008\u000a-\u001f\u007f]/g;
/** Whitespace around a field value (RFC 9110 §5.5: not part of it). */
const VALUE_PADDING = /^[ \t]+|[ \t]+$/g;
const DIGITS = /^[0-9]+$/;

/**
 * The status and headers of an answer that Node's parser refused, read from the bytes of its head as
 * received: a status line, then header lines (`name: value`), each ending in CRLF, up to an empty line;
 * interim (1xx) heads are passed over. Only header values are read leniently: RFC 9110 §5.5 lets a
 * recipient keep or replace control characters in a value, and here each is kept visibly as `\u00XX`,
 * never parsed further (the connection is closed, the body is not read). Undefined when the head is not
 * that shape (no status line, a malformed line or name, a head not ended within the bytes kept) or its
 * framing is one Node's parser refuses too (several Content-Length headers, one that is no number, or one
 * beside Transfer-Encoding): a control character elsewhere does not make those readable.
 */
function readRefusedHead(head: Buffer): { status: number; rawHeaders: string[] } | undefined {
  // Node decodes header bytes as Latin-1 too.
  const text = head.toString("latin1");
  let start = 0;
  for (;;) {
    const end = text.indexOf("\r\n\r\n", start);
    if (end === -1) return undefined;
    const [statusLine = "", ...lines] = text.slice(start, end).split("\r\n");
    const status = STATUS_LINE.exec(statusLine);
    if (!status) return undefined;
    const fields: [name: string, value: string][] = [];
    for (const line of lines) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon);
      if (colon === -1 || !TOKEN.test(name)) return undefined;
      const value = line
        .slice(colon + 1)
        .replace(VALUE_PADDING, "")
        .replace(
          VALUE_CONTROLS,
          (control) => `\\u${control.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`,
        );
      fields.push([name, value]);
    }
    const lengths = fields.filter(([name]) => name.toLowerCase() === "content-length").map(([, value]) => value);
    const transferEncoded = fields.some(([name]) => name.toLowerCase() === "transfer-encoding");
    if (lengths.length > 1 || (lengths.length === 1 && (transferEncoded || !DIGITS.test(lengths[0] ?? ""))))
      return undefined;
    const code = Number(status[1]);
    if (code >= 200) return { status: code, rawHeaders: fields.flat() };
    start = end + 4;
  }
}

/**
 * The first MAX_RESPONSE_BODY_BYTES of a body as text: UTF-8, bytes that are not as U+FFFD, a character
 * the limit cut in two left out, and NUL (which PostgreSQL text cannot hold) as U+FFFD too.
 */
export function bodyText(bytes: Buffer, truncated: boolean): string {
  const kept = bytes.subarray(0, MAX_RESPONSE_BODY_BYTES);
  return new TextDecoder("utf-8").decode(kept, { stream: truncated }).replaceAll("\u0000", "\uFFFD");
}

function post(
  url: URL,
  host: string,
  addresses: dns.LookupAddress[],
  request: WebhookRequest,
  settings: SendSettings,
  signal: AbortSignal,
  deadline: number,
  pooled: boolean,
  answered: () => void,
): Promise<AnswerExcerpt> {
  // Every address handed to the socket was checked above; Node asks for all of them when it races
  // IPv4 and IPv6 (autoSelectFamily), otherwise for one.
  const pinned: net.LookupFunction = (_hostname, options, callback) => {
    const [first] = addresses;
    if (options.all) callback(null, addresses);
    else if (first) callback(null, first.address, first.family);
    else callback(new Error("no address"), "", 0);
  };
  const isLiteral = parseIpLiteral(host) !== undefined;
  return new Promise<AnswerExcerpt>((resolve, reject) => {
    let responded = false;
    // The bytes of the answer's head as received, until Node's parser has read it: should the parser refuse
    // it, readRefusedHead reads them. Node refuses a head past http.maxHeaderSize, so no more is kept.
    let head: Buffer[] = [];
    let headBytes = 0;
    let headSocket: net.Socket | undefined;
    const keepHead = (chunk: Buffer) => {
      if (headBytes >= http.maxHeaderSize) return;
      const kept = chunk.subarray(0, http.maxHeaderSize - headBytes);
      head.push(kept);
      headBytes += kept.length;
    };
    const stopKeepingHead = () => {
      headSocket?.off("data", keepHead);
      headSocket = undefined;
    };
    const req = https.request(
      url,
      {
        method: "POST",
        headers: request.headers,
        lookup: pinned,
        // SNI and the certificate check use the subscription's host name (not for IP literals).
        ...(isLiteral ? {} : { servername: host }),
        ...(settings.secureContext ? { secureContext: settings.secureContext } : {}),
        agent: pooled && settings.pools ? settings.pools.agentFor(host, url.port, addresses) : false,
        signal,
      },
      (res) => {
        // The status decides. The body is read up to one byte past MAX_RESPONSE_BODY_BYTES (to know whether
        // there was more), until it ends, or until the attempt's time runs out, whichever comes first; a
        // whole answer leaves its connection to the pool, anything less closes it.
        responded = true;
        answered();
        stopKeepingHead();
        head = [];
        const chunks: Buffer[] = [];
        let received = 0;
        let more = false;
        let settled = false;
        const settle = () => {
          if (settled) return;
          settled = true;
          clearTimeout(bodyTimer);
          const body = Buffer.concat(chunks);
          const bodyTruncated = more || !res.complete;
          resolve({
            status: res.statusCode ?? 0,
            headers: headersOf(res.rawHeaders),
            body: bodyText(body, bodyTruncated),
            bodyTruncated,
          });
        };
        const bodyTimer = setTimeout(() => req.destroy(), Math.max(0, deadline - Date.now()));
        bodyTimer.unref();
        res.on("data", (chunk: Buffer) => {
          if (received <= MAX_RESPONSE_BODY_BYTES)
            chunks.push(chunk.subarray(0, MAX_RESPONSE_BODY_BYTES + 1 - received));
          received += chunk.length;
          if (received > MAX_RESPONSE_BODY_BYTES) {
            more = true;
            req.destroy();
          }
        });
        res.on("end", settle);
        res.on("error", () => undefined);
        res.on("close", () => {
          if (!res.complete) req.destroy();
          settle();
        });
      },
    );
    // Before Node's own listener sees a chunk (prepended): its parser may refuse the chunk and end the
    // request at once, and the chunk must be kept by then.
    req.on("socket", (socket) => {
      headSocket = socket;
      socket.prependListener("data", keepHead);
    });
    req.on("close", stopKeepingHead);
    req.on("error", (error: NodeJS.ErrnoException) => {
      stopKeepingHead();
      // Once the answer has begun, an error (the reading cut short) ends the body: "close" settles it.
      if (responded) return;
      // The parser refused a character of the answer's head; if its status line and header lines can still
      // be read, the status decides. The connection is closed and the body not read.
      const refused = HEADER_CHARACTER_REFUSALS.has(error.code ?? "")
        ? readRefusedHead(Buffer.concat(head))
        : undefined;
      if (refused) {
        responded = true;
        answered();
        resolve({ status: refused.status, headers: headersOf(refused.rawHeaders), body: "", bodyTruncated: true });
        return;
      }
      const stale =
        req.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE" || error.code === "ECONNABORTED");
      reject(stale ? new StaleConnection("kept-alive connection closed", { cause: error }) : error);
    });
    req.end(request.body);
  });
}
