// The listen transport: an attempt of a delivery to a listen session (a subscription without a URL) is not
// sent by the worker but offered to the session, signed exactly as it would be sent (the same body bytes
// and headers). A poll hands the offer out; the listener sends it to its local receiver and reports the
// answer, which queues the delivery's job for the attempt again; that run turns the answer into the
// attempt's outcome, recorded as any other. An offer unanswered by its answer_by is recorded as a timeout
// by the job queued for that moment with the offer. No run waits for the listener: each returns at once.
import type { Knex } from "knex";
import { findListenOffer, offerToListener, type ListenOffer } from "../db/webhooks/listen-sessions.ts";
import {
  bodyText,
  failed,
  headersOf,
  MAX_RESPONSE_BODY_BYTES,
  verdictOf,
  type Failure,
  type SendOutcome,
} from "./sender.ts";

/** How long an offer waits for its answer (the document's `answer_by`: 60 seconds after `offered_at`). */
export const LISTEN_ANSWER_SECONDS = 60;

/** What a listen attempt that failed shows the tenant, beside the HTTP statuses (FAILURE.httpStatus). */
export const LISTEN_FAILURE = {
  receiverTimeout: {
    errorClass: "timeout",
    message: "Timeout",
    sentence: "The local receiver sent no answer within the listener's time limit.",
  },
  receiverUnreachable: {
    errorClass: "connection_failed",
    message: "Connection failed",
    sentence:
      "The listener got no answer from the local receiver: the connection was refused, reset or could not be made, or the answer could not be read as HTTP.",
  },
  notTaken: {
    errorClass: "timeout",
    message: "Listener did not answer",
    sentence: `The listener did not take the delivery within ${LISTEN_ANSWER_SECONDS} s: the session was not polled.`,
  },
  notReported: {
    errorClass: "timeout",
    message: "Listener did not answer",
    sentence: `The listener took the delivery but reported no answer within ${LISTEN_ANSWER_SECONDS} s.`,
  },
} as const satisfies Record<string, Failure>;

/** What this run of a listen delivery's job does: offer the attempt, wait for its answer, or record it. */
export type ListenTurn =
  | { kind: "offered" }
  | { kind: "waiting" }
  | { kind: "answered"; attempt: number; attemptedAt: Date; outcome: SendOutcome };

/**
 * The turn of a pending delivery to a listen session with `attempts` attempts so far: with no offer of its
 * next attempt, the attempt signed by `sign` is offered now; with one, its answer (or its timeout, once
 * answer_by has passed) is the attempt's outcome, for the caller to record; otherwise it waits.
 */
export async function listenTurn(
  db: Knex,
  delivery: { tenant_id: string; id: string; attempts: number },
  sign: (offeredAt: Date) => { body: string; headers: Record<string, string> },
  now: Date = new Date(),
): Promise<ListenTurn> {
  const offer = await findListenOffer(db, delivery.tenant_id, delivery.id);
  if (offer === undefined || offer.attempt <= delivery.attempts) {
    const { body, headers } = sign(now);
    await offerToListener(db, {
      tenantId: delivery.tenant_id,
      deliveryId: delivery.id,
      attemptsBefore: delivery.attempts,
      body,
      headers,
      offeredAt: now,
      answerBy: new Date(now.getTime() + LISTEN_ANSWER_SECONDS * 1000),
    });
    return { kind: "offered" };
  }
  const outcome = outcomeOf(offer);
  if (outcome === undefined) return { kind: "waiting" };
  return { kind: "answered", attempt: offer.attempt, attemptedAt: offer.offeredAt, outcome };
}

/**
 * The attempt's outcome from its offer: the answer reported, a timeout once answer_by has passed (by the
 * database's clock, which ran the job queued for it), else undefined.
 */
function outcomeOf(offer: ListenOffer): SendOutcome | undefined {
  const requestHeaders = offer.headers;
  if (offer.answeredAt !== null) {
    const durationMs = offer.durationMs ?? 0;
    if (offer.responseCode !== null) {
      const bytes = Buffer.from(offer.responseBody ?? "", "utf8");
      const truncated = offer.responseBodyTruncated || bytes.length > MAX_RESPONSE_BODY_BYTES;
      return {
        ...verdictOf(offer.responseCode),
        requestHeaders,
        response: {
          status: offer.responseCode,
          headers: headersOf(Object.entries(offer.responseHeaders ?? {}).flat()),
          body: bodyText(bytes, truncated),
          bodyTruncated: truncated,
        },
        durationMs,
      };
    }
    const failure =
      offer.errorClass === "timeout" ? LISTEN_FAILURE.receiverTimeout : LISTEN_FAILURE.receiverUnreachable;
    return { ...failed(failure, `listener reported ${offer.errorClass}`), requestHeaders, response: null, durationMs };
  }
  if (!offer.due) return undefined;
  const failure = offer.handedOutAt === null ? LISTEN_FAILURE.notTaken : LISTEN_FAILURE.notReported;
  return {
    ...failed(failure, failure.message),
    requestHeaders,
    response: null,
    durationMs: offer.answerBy.getTime() - offer.offeredAt.getTime(),
  };
}
