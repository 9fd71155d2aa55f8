// `integrator-api-contract listen`: a listen session of the tenant (createWebhookListenSession), polled over
// an outbound connection (pollWebhookListenSession, a long poll), each delivery sent to the local URL with
// the exact body and headers the service signed (forward.ts) and the receiver's answer reported back
// (reportWebhookListenAnswer), which the service records as the attempt. One line per delivery on stdout:
// when, the event, its id, the attempt, the local answer and how long it took. A session that ended (the
// machine slept past its end) is started again with the same secret. Stopping (Ctrl-C) lets the deliveries
// under way finish and be reported, then ends the session.
import http from "node:http";
import { createIntegratorClient, type IntegratorClient, type Schemas, type TokenSource } from "../src/index.ts";
import { forward, type LocalAnswer } from "./forward.ts";

type ListenDelivery = Schemas["WebhookListenDelivery"];
type EventSelector = Schemas["WebhookEventSelector"];

export interface ListenOptions {
  baseUrl: string;
  token: TokenSource;
  forwardTo: URL;
  events: EventSelector[] | undefined;
  secret: string | undefined;
  timeoutMs: number;
  /** Aborts to stop. */
  stop: AbortSignal;
  out: (line: string) => void;
  err: (line: string) => void;
}

const WAIT_SECONDS = 25;
/** Deliveries sent to the local receiver at once, at most. */
const IN_FLIGHT = 10;
const MAX_BACKOFF_MS = 30_000;

/** Thrown when going on makes no sense: the message says what to do. */
export class ListenStopped extends Error {
  override name = "ListenStopped";
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

function retryAfterMs(response: Response | undefined, fallbackMs: number): number {
  const value = Number(response?.headers.get("Retry-After"));
  return Number.isFinite(value) && value > 0 ? value * 1000 : fallbackMs;
}

/** The error envelope's message, or the status. */
function refusal(error: unknown, response: Response | undefined): string {
  const envelope = error as { error?: { code?: string; message?: string } } | undefined;
  const message = envelope?.error?.message;
  return message
    ? `${response?.status ?? ""} ${envelope.error?.code ?? ""}: ${message}`
    : `HTTP ${response?.status ?? "?"}`;
}

/** One line for the terminal: when, what, and what the local receiver said. */
export function deliveryLine(delivery: ListenDelivery, answer: LocalAnswer, at: Date): string {
  const outcome =
    "responseCode" in answer
      ? `${answer.responseCode} ${http.STATUS_CODES[answer.responseCode] ?? ""}`.trim()
      : answer.errorClass === "timeout"
        ? `timeout (${answer.reason})`
        : `connection failed (${answer.reason})`;
  const attempt = delivery.attempt > 1 ? `  attempt ${delivery.attempt}` : "";
  return `${at.toISOString()}  ${delivery.event_type}  ${delivery.event_id}${attempt}  -> ${outcome}  ${answer.durationMs} ms  [delivery ${delivery.delivery_id}]`;
}

export async function listen(options: ListenOptions): Promise<void> {
  const { stop, out, err } = options;
  const api = createIntegratorClient({ baseUrl: options.baseUrl, token: options.token });
  let secret = options.secret;
  let firstStart = true;

  /** Fails with ListenStopped on a refusal that waiting does not cure. */
  const refused = (what: string, error: unknown, response: Response): never => {
    if (response.status === 401 || response.status === 403)
      throw new ListenStopped(
        `${what}: the service refused the credential (${refusal(error, response)}). Give a valid token in INTEGRATOR_TOKEN, or INTEGRATOR_CLIENT_ID and INTEGRATOR_CLIENT_SECRET.`,
      );
    throw new ListenStopped(`${what}: ${refusal(error, response)}`);
  };

  /** Starts a session (again with the same secret after the first). */
  const start = async (): Promise<{ id: string; expiresAt: string }> => {
    for (let backoffMs = 1000; ; backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS)) {
      let answer;
      try {
        answer = await api.POST("/v1/webhooks/listen-sessions", {
          body: { ...(options.events ? { events: options.events } : {}), ...(secret ? { secret } : {}) },
        });
      } catch (error) {
        if (stop.aborted) throw new ListenStopped("stopped before the session started");
        err(`cannot reach ${options.baseUrl} (${error instanceof Error ? error.message : String(error)}); trying again`);
        await pause(backoffMs, stop);
        continue;
      }
      const { data, error, response } = answer;
      if (data) {
        const changed = secret !== undefined && secret !== data.secret;
        secret = data.secret;
        if (firstStart || changed) {
          const kinds = data.events.includes("*") ? "every event kind" : data.events.join(", ");
          out(`Ready. Listen session ${data.id} forwards ${kinds} to ${options.forwardTo.href}`);
          out(`Webhook signing secret: ${data.secret}`);
          out("(verify deliveries with it; set INTEGRATOR_WEBHOOK_SECRET to it to keep it across runs; Ctrl-C to stop)");
        } else out(`Listen session ${data.id} started again; the signing secret is the same.`);
        firstStart = false;
        return { id: data.id, expiresAt: data.expires_at };
      }
      if (response.status === 429 || response.status === 503) {
        await pause(retryAfterMs(response, backoffMs), stop);
        continue;
      }
      return refused("Starting a listen session", error, response);
    }
  };

  /** Reports the answer; a refusal or a late answer is said on stderr (the attempt is then a timeout). */
  const report = async (sessionId: string, delivery: ListenDelivery, answer: LocalAnswer): Promise<void> => {
    const body = {
      delivery_id: delivery.delivery_id,
      attempt: delivery.attempt,
      duration_ms: answer.durationMs,
      ...("responseCode" in answer
        ? {
            response_code: answer.responseCode,
            response_headers: answer.responseHeaders,
            response_body: answer.responseBody,
            response_body_truncated: answer.responseBodyTruncated,
          }
        : { error_class: answer.errorClass }),
    };
    const answerBy = Date.parse(delivery.answer_by);
    for (let backoffMs = 500; Date.now() < answerBy; backoffMs = Math.min(backoffMs * 2, 5000)) {
      try {
        const { error, response } = await api.POST("/v1/webhooks/listen-sessions/{session_id}/answers", {
          params: { path: { session_id: sessionId } },
          body,
        });
        if (response.status === 202) return;
        if (response.status !== 429 && response.status !== 503) {
          err(`the answer to delivery ${delivery.delivery_id} was not recorded: ${refusal(error, response)}`);
          return;
        }
        await pause(retryAfterMs(response, backoffMs), AbortSignal.timeout(Math.max(0, answerBy - Date.now())));
      } catch {
        await pause(backoffMs, AbortSignal.timeout(Math.max(0, answerBy - Date.now())));
      }
    }
    err(`the answer to delivery ${delivery.delivery_id} could not be reported before ${delivery.answer_by}`);
  };

  let session = await start();
  const underWay = new Set<Promise<void>>();
  const handle = (sessionId: string, delivery: ListenDelivery) => {
    const task = (async () => {
      const answer = await forward(options.forwardTo, delivery, options.timeoutMs);
      out(deliveryLine(delivery, answer, new Date()));
      await report(sessionId, delivery, answer);
    })().finally(() => underWay.delete(task));
    underWay.add(task);
  };

  for (let backoffMs = 1000; !stop.aborted; ) {
    while (underWay.size >= IN_FLIGHT) await Promise.race(underWay);
    let polled;
    try {
      polled = await api.POST("/v1/webhooks/listen-sessions/{session_id}/poll", {
        params: { path: { session_id: session.id }, query: { wait_seconds: WAIT_SECONDS } },
        signal: stop,
      });
    } catch (error) {
      if (stop.aborted) break;
      err(`cannot reach ${options.baseUrl} (${error instanceof Error ? error.message : String(error)}); trying again`);
      await pause(backoffMs, stop);
      backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
      continue;
    }
    const { data, error, response } = polled;
    if (data) {
      backoffMs = 1000;
      for (const delivery of data.deliveries) handle(session.id, delivery);
      continue;
    }
    if (response.status === 404) {
      err(`listen session ${session.id} has ended (it was not polled for a minute); starting a new one`);
      session = await start();
      continue;
    }
    if (response.status === 429 || response.status === 503) {
      await pause(retryAfterMs(response, backoffMs), stop);
      continue;
    }
    refused("Polling the listen session", error, response);
  }

  await Promise.allSettled(underWay);
  await endSession(api, session.id, err);
}

async function endSession(api: IntegratorClient, sessionId: string, err: (line: string) => void): Promise<void> {
  try {
    const { response } = await api.DELETE("/v1/webhooks/listen-sessions/{session_id}", {
      params: { path: { session_id: sessionId } },
    });
    if (response.status !== 204) err(`ending listen session ${sessionId} answered ${response.status}`);
  } catch (error) {
    err(`ending listen session ${sessionId} failed (${error instanceof Error ? error.message : String(error)})`);
  }
}
