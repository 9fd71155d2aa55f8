// Retries of the typed client and the token provider: a request that is safe to send again is retried when
// the service answers 429 or 503 (or 409 IDEMPOTENCY_IN_PROGRESS to a keyed call) or when no answer came,
// after the wait `Retry-After` asks for. A POST without an Idempotency-Key is never retried: the service may
// have acted on it.

export interface RetryOptions {
  /** Attempts in all, the first one included (default 3); 1 sends every request once. */
  maxAttempts?: number;
  /**
   * The longest wait before a retry, in seconds (default 60, the longest the service's rate limits ask for):
   * an answer whose `Retry-After` asks for longer is returned as it is.
   */
  maxWaitSeconds?: number;
  /** Called before each wait, e.g. to log it. */
  onRetry?: (retry: RetryNotice) => void;
}

export interface RetryNotice {
  method: string;
  url: string;
  /** The attempt that failed, from 1. */
  attempt: number;
  /** Its HTTP status; undefined when no answer came (a network error). */
  status: number | undefined;
  /** How long the client waits before the next attempt. */
  waitMs: number;
}

/** Sends one request; the shape openapi-fetch calls (its second argument is undici's request extension). */
export type Fetch = (request: Request, init?: unknown) => Promise<Response>;

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_MAX_WAIT_SECONDS = 60;
/** The wait before the first retry when the answer names none (doubling from there, with jitter). */
const BACKOFF_BASE_MS = 500;
/** HTTP methods that mean the same when sent twice (RFC 9110 §9.2.2). */
const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/**
 * The wait `Retry-After` asks for, in milliseconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); a date
 * already past is 0. Undefined when the header is absent or not one of the two forms.
 */
export function retryAfterMilliseconds(value: string | null, now = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Whether sending `request` again cannot act twice: an idempotent method, or a call carrying an Idempotency-Key. */
export function safeToRepeat(request: Request): boolean {
  return IDEMPOTENT_METHODS.has(request.method.toUpperCase()) || request.headers.has("Idempotency-Key");
}

function answerAsksForRetry(request: Request, response: Response): boolean {
  if (response.status === 429 || response.status === 503) return true;
  // The same key while the first call is still running: 409 IDEMPOTENCY_IN_PROGRESS with Retry-After.
  return response.status === 409 && request.headers.has("Idempotency-Key") && response.headers.has("Retry-After");
}

function backoffMs(attempt: number): number {
  return Math.round(BACKOFF_BASE_MS * 2 ** (attempt - 1) * (0.5 + Math.random() / 2));
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", abort, { once: true });
  });
}

export interface RetryingFetchOptions {
  retry?: RetryOptions | false | undefined;
  /** Prepares each attempt, e.g. with the current bearer token. */
  prepare?: ((attempt: Request) => Promise<void>) | undefined;
  /** Every request is safe to repeat (the token endpoint: a second token harms nobody). */
  alwaysSafe?: boolean;
}

/** `send` with retries: each attempt is a fresh copy of the request, so its body can be sent again. */
export function retryingFetch(send: Fetch, options: RetryingFetchOptions = {}): Fetch {
  const retry = options.retry === false ? { maxAttempts: 1 } : (options.retry ?? {});
  const maxAttempts = Math.max(1, Math.floor(retry.maxAttempts ?? DEFAULT_ATTEMPTS));
  const maxWaitMs = (retry.maxWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS) * 1000;
  return async (request, init) => {
    const repeatable = options.alwaysSafe === true || safeToRepeat(request);
    for (let attempt = 1; ; attempt++) {
      const copy = request.clone();
      await options.prepare?.(copy);
      const last = !repeatable || attempt >= maxAttempts;
      let response: Response;
      try {
        response = await send(copy, init);
      } catch (error) {
        // fetch rejects with a TypeError when no answer came; an abort is the caller's and ends the call.
        if (last || !(error instanceof TypeError) || request.signal.aborted) throw error;
        const waitMs = Math.min(backoffMs(attempt), maxWaitMs);
        retry.onRetry?.({ method: request.method, url: request.url, attempt, status: undefined, waitMs });
        await pause(waitMs, request.signal);
        continue;
      }
      if (last || !answerAsksForRetry(request, response)) return response;
      const waitMs =
        retryAfterMilliseconds(response.headers.get("Retry-After")) ?? Math.min(backoffMs(attempt), maxWaitMs);
      if (waitMs > maxWaitMs) return response;
      retry.onRetry?.({ method: request.method, url: request.url, attempt, status: response.status, waitMs });
      await response.body?.cancel();
      await pause(waitMs, request.signal);
    }
  };
}
