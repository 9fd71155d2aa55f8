// One HTTPS POST of a webhook delivery, with the send-time SSRF rule of docs/decisions.md §5: the host is
// resolved once, every address is checked against the blocked ranges, and the connection goes to a
// checked address (no second lookup). Redirects are never followed; the whole attempt — resolution,
// connect, TLS and response headers — runs under one timeout; at most a few KiB of the answer are read.
// What a failed attempt tells the tenant is a coarse class (FAILURE), never an address, a port's state
// or a TLS error code: those would make the service a port scanner of public hosts. The detail goes
// to our logs only (SendOutcome.detail).
import dns from "node:dns";
import fs from "node:fs";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import {
  checkWebhookUrl,
  isBlockedAddress,
  parseIpLiteral,
  type PortRanges,
  type UrlVerdict,
} from "../server/url-safety.ts";
import { boundedMemo } from "./memo.ts";
import type { Config } from "../server/config.ts";
import { errorMessage } from "../server/error-message.ts";
import type { AttemptErrorClass } from "../db/webhooks.ts";

const MAX_RESPONSE_BYTES = 4096;
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

  constructor(maxSocketsPerTarget = 20) {
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
 * What a failed attempt shows the tenant: its class (an attempt's error_class) and the sentence that is the
 * delivery's error_message (the document lists both).
 * An HTTP answer outside 2xx is "HTTP status NNN" (FAILURE.httpStatus).
 */
export const FAILURE = {
  timeout: { errorClass: "timeout", message: "Timeout" },
  connection: { errorClass: "connection_failed", message: "Connection failed" },
  tls: { errorClass: "tls_failed", message: "TLS failed" },
  dns: { errorClass: "connection_failed", message: "DNS lookup failed" },
  invalidResponse: { errorClass: "connection_failed", message: "Invalid HTTP response" },
  targetNotAllowed: { errorClass: "connection_failed", message: "Target not allowed" },
  interrupted: { errorClass: "connection_failed", message: "Interrupted: the worker stopped" },
  other: { errorClass: "connection_failed", message: "Request failed" },
  httpStatus: (status: number): Failure => ({ errorClass: "http_status", message: `HTTP status ${status}` }),
} as const satisfies Record<string, Failure | ((status: number) => Failure)>;

/** A failed attempt as the tenant sees it: its class (the document's enum) and the sentence beside it. */
export interface Failure {
  errorClass: AttemptErrorClass;
  message: string;
}

export type SendOutcome =
  | { delivered: true; responseCode: number }
  | {
      delivered: false;
      responseCode: number | null;
      /** The coarse class the tenant sees in the attempt history (FAILURE). */
      errorClass: AttemptErrorClass;
      /** The sentence the tenant sees as the delivery's error_message (FAILURE). */
      errorMessage: string;
      /** What happened exactly, for our logs only. */
      detail: string;
    };

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

/** The send settings from the configuration; reads WEBHOOK_CA_FILE once. Connections are kept alive per checked target. */
export function sendSettings(webhooks: Config["webhooks"]): SendSettings {
  return {
    pools: new ConnectionPools(),
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

function failed(failure: Failure, detail: string, responseCode: number | null = null): SendOutcome {
  return {
    delivered: false,
    responseCode,
    errorClass: failure.errorClass,
    errorMessage: failure.message.slice(0, MAX_ERROR_LENGTH),
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
    case "HPE_INVALID_CONSTANT":
    case "HPE_INVALID_STATUS":
    case "HPE_INVALID_HEADER_TOKEN":
      return { failure: FAILURE.invalidResponse, detail };
    default:
      break;
  }
  if (
    typeof code === "string" &&
    /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_|ERR_TLS_CERT)/.test(code)
  )
    return { failure: FAILURE.tls, detail };
  return { failure: FAILURE.other, detail };
}

/**
 * Sends one attempt. Never throws: every failure (URL rule, port, resolution, blocked address,
 * connection, TLS, timeout, non-2xx answer) is a failed outcome with its class and detail.
 * `shutdown` (the worker's long-lived abort signal) cuts the attempt short; its listener is removed
 * when the attempt ends, so attempts leave nothing behind on it.
 */
export async function sendWebhook(
  request: WebhookRequest,
  settings: SendSettings,
  shutdown?: AbortSignal,
): Promise<SendOutcome> {
  const verdict = settings.checkUrl
    ? settings.checkUrl(request.url)
    : checkWebhookUrl(request.url, { allowedPorts: settings.allowedPorts });
  if (!verdict.ok) return failed(FAILURE.targetNotAllowed, `URL rule ${verdict.rule}: ${verdict.message}`);
  const { url, host } = verdict;
  const deadline = Date.now() + settings.timeoutMs;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onShutdown: (() => void) | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new AttemptFailed(FAILURE.timeout, `Timed out after ${settings.timeoutMs} ms`));
      abort.abort();
    }, settings.timeoutMs);
    // A worker shutting down cuts the attempt short; it is recorded as failed and retried.
    onShutdown = () => {
      reject(new AttemptFailed(FAILURE.interrupted, "Aborted: the worker is shutting down"));
      abort.abort();
    };
    if (shutdown?.aborted) onShutdown();
    else shutdown?.addEventListener("abort", onShutdown, { once: true });
  });
  try {
    const addresses = await Promise.race([resolveHost(host, settings), timedOut]);
    if (addresses.length === 0) return failed(FAILURE.dns, `Host ${host} has no addresses`);
    if (!settings.allowPrivateTargets && addresses.some((entry) => isBlockedAddress(entry.address))) {
      return failed(
        FAILURE.targetNotAllowed,
        `Host ${host} resolves to a private, loopback, link-local or reserved address; not connecting`,
      );
    }
    const attempt = (pooled: boolean) => post(url, host, addresses, request, settings, abort.signal, deadline, pooled);
    // A kept-alive connection the receiver closed just as it was reused fails before any answer: once,
    // the attempt goes again on a new connection (to the same checked addresses).
    return await Promise.race([
      attempt(settings.pools !== undefined).catch((error: unknown) => {
        if (!(error instanceof StaleConnection) || Date.now() >= deadline) throw error;
        return attempt(false);
      }),
      timedOut,
    ]);
  } catch (error) {
    const { failure, detail } = classify(error);
    return failed(failure, detail);
  } finally {
    clearTimeout(timer);
    if (onShutdown) shutdown?.removeEventListener("abort", onShutdown);
  }
}

function outcomeOf(status: number): SendOutcome {
  if (status >= 200 && status < 300) return { delivered: true, responseCode: status };
  if (status >= 300 && status < 400) return failed(FAILURE.httpStatus(status), "redirect not followed", status);
  return failed(FAILURE.httpStatus(status), `HTTP ${status}`, status);
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
): Promise<SendOutcome> {
  // Every address handed to the socket was checked above; Node asks for all of them when it races
  // IPv4 and IPv6 (autoSelectFamily), otherwise for one.
  const pinned: net.LookupFunction = (_hostname, options, callback) => {
    const [first] = addresses;
    if (options.all) callback(null, addresses);
    else if (first) callback(null, first.address, first.family);
    else callback(new Error("no address"), "", 0);
  };
  const isLiteral = parseIpLiteral(host) !== undefined;
  return new Promise<SendOutcome>((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: "POST",
        headers: { ...request.headers, "Content-Length": String(Buffer.byteLength(request.body)) },
        lookup: pinned,
        // SNI and the certificate check use the subscription's host name (not for IP literals).
        ...(isLiteral ? {} : { servername: host }),
        ...(settings.secureContext ? { secureContext: settings.secureContext } : {}),
        agent: pooled && settings.pools ? settings.pools.agentFor(host, url.port, addresses) : false,
        signal,
      },
      (res) => {
        // The status decides; the answer's content is not kept. Read at most a few KiB of it so a
        // well-behaved receiver can finish cleanly (its connection then stays in the pool), else close,
        // and never past the deadline.
        resolve(outcomeOf(res.statusCode ?? 0));
        let received = 0;
        const drainTimer = setTimeout(() => req.destroy(), Math.max(0, deadline - Date.now()));
        drainTimer.unref();
        res.on("data", (chunk: Buffer) => {
          received += chunk.length;
          if (received >= MAX_RESPONSE_BYTES) req.destroy();
        });
        res.on("error", () => undefined);
        res.on("close", () => {
          clearTimeout(drainTimer);
          // A whole answer leaves the connection to its pool; anything less closes it.
          if (!res.complete) req.destroy();
        });
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) => {
      const stale =
        req.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE" || error.code === "ECONNABORTED");
      reject(stale ? new StaleConnection("kept-alive connection closed", { cause: error }) : error);
    });
    req.end(request.body);
  });
}
