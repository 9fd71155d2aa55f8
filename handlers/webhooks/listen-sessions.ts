// Listen sessions: a tenant's endpoint without a URL, for a receiver on a developer's machine. Started and
// ended here (audited like the subscriptions' changes); polled for the attempts the worker signed and
// offered, waiting for the next one (a long poll: woken by the offer's notification, holding no database
// connection meanwhile); and told what the local receiver answered, which the worker records as the
// attempt (db/webhooks/listen-sessions.ts).
import { ApiError, notFound } from "../../http/errors.ts";
import { principalOf, type OperationHandler } from "../../http/operations.ts";
import { RequestValidationError, valueError } from "../../http/validation.ts";
import { newWebhookSecret, webhookSecretKey } from "../../foundation/signing.ts";
import { ListenWakeUps } from "../../foundation/listen-wake-ups.ts";
import { rfc3339 } from "../../db/timestamps.ts";
import {
  createListenSession,
  endListenSession,
  keepListenAnswer,
  listenSessionIsLive,
  ListenSessionLimitReached,
  renewListenSession,
  takeListenOffers,
  type ListenDeliveryView,
} from "../../db/webhooks/listen-sessions.ts";
import { recordAudit } from "../../db/audit.ts";
import type { EventSelector } from "../../db/events.ts";

/** A session ends this long after the wait of its last poll (the document says 60 seconds). */
export const LISTEN_IDLE_SECONDS = 60;
/** The most deliveries one poll hands out (the document's maxItems). */
const POLL_BATCH = 10;
const DEFAULT_WAIT_SECONDS = 25;
/** Standard Webhooks keys are 24 to 64 bytes. */
const SECRET_KEY_BYTES = { min: 24, max: 64 };

/** A secret the caller brings, or a 422 value_error at ["body", "secret"] when its key is not 24 to 64 bytes. */
function broughtSecret(secret: string): string {
  const bytes = webhookSecretKey(secret).length;
  if (bytes < SECRET_KEY_BYTES.min || bytes > SECRET_KEY_BYTES.max)
    throw new RequestValidationError([
      valueError(
        ["body", "secret"],
        `the secret must encode ${SECRET_KEY_BYTES.min} to ${SECRET_KEY_BYTES.max} bytes after whsec_, not ${bytes}`,
      ),
    ]);
  return secret;
}

export const createWebhookListenSession: OperationHandler<"createWebhookListenSession"> = async ({
  body,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const secret = body?.secret === undefined ? newWebhookSecret() : broughtSecret(body.secret);
  const events = [...new Set<EventSelector>(body?.events ?? ["*"])];
  const limit = services.config.webhooks.listenSessionsPerTenant;
  try {
    const session = await services.db.transaction(async (trx) => {
      const started = await createListenSession(trx, {
        tenantId: caller.tenantId,
        events,
        secretSealed: services.secretBox.seal(secret),
        createdBy: caller.subject,
        maxSessions: limit,
        idleSeconds: LISTEN_IDLE_SECONDS,
      });
      await recordAudit(trx, {
        tenantId: caller.tenantId,
        action: "webhooks.listen_session_started",
        actor: caller.subject,
        resourceType: "webhook_listen_session",
        resourceId: started.id,
        requestId,
        details: { events, secret: body?.secret === undefined ? "new" : "given" },
      });
      return started;
    });
    return { status: 201, body: { ...session, secret } };
  } catch (error) {
    if (error instanceof ListenSessionLimitReached)
      throw new ApiError(
        "WEBHOOK_LISTEN_SESSION_LIMIT_REACHED",
        `This tenant already has ${error.limit} listen sessions, the most allowed`,
        { details: { limit: error.limit } },
      );
    throw error;
  }
};

export const deleteWebhookListenSession: OperationHandler<"deleteWebhookListenSession"> = async ({
  params,
  principal,
  requestId,
  services,
}) => {
  const caller = principalOf({ principal });
  const ended = await services.db.transaction(async (trx) => {
    if (!(await endListenSession(trx, caller.tenantId, params.session_id))) return false;
    await recordAudit(trx, {
      tenantId: caller.tenantId,
      action: "webhooks.listen_session_ended",
      actor: caller.subject,
      resourceType: "webhook_listen_session",
      resourceId: params.session_id,
      requestId,
    });
    return true;
  });
  if (!ended) throw notFound("Listen session");
  return { status: 204, body: undefined };
};

export const pollWebhookListenSession: OperationHandler<"pollWebhookListenSession"> = async ({
  params,
  query,
  principal,
  signal,
  services,
}) => {
  const { tenantId } = principalOf({ principal });
  const wakeUps = services.listenWakeUps;
  if (wakeUps.closed)
    throw new ApiError("SERVICE_UNAVAILABLE", "This instance of the service is shutting down; poll again", {
      headers: { "Retry-After": "2" },
    });
  const waitSeconds = query.wait_seconds === undefined ? DEFAULT_WAIT_SECONDS : Number(query.wait_seconds);
  // The session lives through this poll's wait, and LISTEN_IDLE_SECONDS after it.
  const expiresAt = await renewListenSession(
    services.db,
    tenantId,
    params.session_id,
    waitSeconds + LISTEN_IDLE_SECONDS,
  );
  if (expiresAt === undefined) throw notFound("Listen session");
  const key = ListenWakeUps.key(tenantId, params.session_id);
  const deadline = Date.now() + waitSeconds * 1000;
  let deliveries: ListenDeliveryView[];
  for (;;) {
    // Watching before looking: an offer made between the look and the wait still wakes this poll.
    const watch = wakeUps.watch(key);
    deliveries = await takeListenOffers(services.db, tenantId, params.session_id, POLL_BATCH);
    const left = deadline - Date.now();
    if (deliveries.length > 0 || left <= 0) {
      watch.stop();
      break;
    }
    const end = await watch.until(Math.min(left, wakeUps.recheckMs), signal);
    // The client went away: hand nothing out to it.
    if (end === "aborted") break;
    if (end === "superseded" || end === "closed") {
      deliveries = await takeListenOffers(services.db, tenantId, params.session_id, POLL_BATCH);
      break;
    }
  }
  return { status: 200, body: { deliveries, expires_at: rfc3339(expiresAt) } };
};

export const reportWebhookListenAnswer: OperationHandler<"reportWebhookListenAnswer"> = async ({
  params,
  body,
  principal,
  services,
}) => {
  const { tenantId } = principalOf({ principal });
  const answered = body.response_code !== undefined;
  if (answered === (body.error_class !== undefined))
    throw new RequestValidationError([
      valueError(["body"], "give exactly one of response_code (the receiver answered) and error_class (it did not)"),
    ]);
  if (!(await listenSessionIsLive(services.db, tenantId, params.session_id))) throw notFound("Listen session");
  const kept = await keepListenAnswer(services.db, tenantId, params.session_id, {
    deliveryId: body.delivery_id,
    attempt: body.attempt,
    responseCode: body.response_code ?? null,
    errorClass: body.error_class ?? null,
    durationMs: body.duration_ms,
    responseHeaders: answered ? (body.response_headers ?? {}) : null,
    responseBody: answered ? (body.response_body ?? "") : null,
    responseBodyTruncated: answered && body.response_body_truncated === true,
  });
  if (!kept)
    throw new ApiError(
      "WEBHOOK_LISTEN_ANSWER_NOT_EXPECTED",
      `Attempt ${body.attempt} of this delivery is not waiting for an answer`,
    );
  return { status: 202, body: undefined };
};
