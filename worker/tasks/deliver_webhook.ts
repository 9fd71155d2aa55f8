// deliver_webhook: one attempt at sending one delivery (queued by integrator.emit_event, and by this
// task for its retries). The body is the stored envelope with sorted keys, signed with the
// subscription's secret. After every attempt the delivery records it; a failure with attempts left
// queues the next attempt itself, WEBHOOK_RETRY_SCHEDULE's wait later (and the delivery shows when, as
// next_attempt_at), and this job succeeds, so graphile-worker's own backoff never drives the schedule. A job whose delivery is
// already final, or whose attempt another run already recorded (the job carries the attempt it is
// for), does nothing.
// An attempt sent while the database is away is recorded once it is back (worker/database-waits.ts): its job
// does not end before, so the attempt is never sent a second time for want of its record.
// A listen session (a subscription without a URL) is not sent to: each attempt is offered to its listener,
// signed the same, and recorded by a later run once the listener's answer, or its timeout, is in
// (worker/listener.ts); no run waits for the listener.
// Reads of deliveries and records of attempts that happen together go in one statement each
// (worker/batches.ts): an event's deliveries are read at once, and attempts that end while a record is on
// its way are recorded together. Every attempt holds a place among the worker's sends while it is paced
// and sent (worker/fairness.ts SendLimits: WORKER_MAX_SENDS, WEBHOOK_MAX_SENDS_PER_ENDPOINT, a tenant's
// share); a job whose attempt had not started when the worker stopped fails, to run again later with its
// attempt unspent.
// A subscription with a rate limit has each attempt paced first (db/functions/pace_delivery.sql): when the
// endpoint's budget is spent, the job is moved to the delivery's slot and this run returns at once, its
// attempt unspent (worker/pacing.ts wakes the worker then); a slot never waits for the limit.
import type { Task } from "graphile-worker";
import { currentTraceCarrier, inSpan, type SpanAttributes, type SpanHandle } from "../../foundation/tracing.ts";
import { canonicalJson } from "../../foundation/canonical-json.ts";
import type { Services } from "../../foundation/services.ts";
import { signatureHeaders } from "../signatures.ts";
import { recordDeliveryOutcome } from "../../foundation/metrics.ts";
import { isDeliverWebhookPayload, type DeliverWebhookPayload } from "../../db/jobs.ts";
import { eventIdOf } from "../../db/events.ts";
import { sendSettings, sendWebhook, type SendOutcome, type SendSettings } from "../sender.ts";
import { listenTurn } from "../listener.ts";

import { boundedMemo } from "../memo.ts";
import { DEACTIVATED, DISABLED, MANUALLY_DISABLED } from "../../db/webhooks/views.ts";
import {
  failWithoutAttempt,
  findDeliveriesToSend,
  paceDelivery,
  recordAttempts,
  type AttemptRecord,
  type DeliveryToSend,
  type HealthRules,
} from "../../db/webhooks/sending.ts";
import type { TraceContext } from "../../db/trace-context.ts";
import { Batches } from "../batches.ts";
import { SendLimits } from "../fairness.ts";
import { dropListenOffer } from "../../db/webhooks/listen-sessions.ts";
import type { WakeUps } from "../pacing.ts";
import { whileDatabaseAway } from "../database-waits.ts";

/** Seconds to wait before retry n (n ≥ 1): the n-th of the configured waits (foundation/config.ts retryWaits). */
export function retryDelaySeconds(retry: number, waitsSeconds: readonly number[]): number {
  return waitsSeconds[Math.min(Math.max(retry, 1), waitsSeconds.length) - 1] ?? 0;
}

/** Endpoint health's rules are off for a listen session: a developer's receiver failing does not disable it. */
const LISTEN_HEALTH: HealthRules = { disableAfterFailedDeliveries: 0, disableAfterFailingDays: 0 };

/** The header marking a test delivery (its envelope says `test: true`); absent on the deliveries of real events. */
export const TEST_HEADER = "X-Service-Review-Test";

/**
 * The headers of one attempt: content type, user agent, the event kind and delivery id, the test mark when
 * the envelope is a test's, and its signatures; the Standard Webhooks message id is the event's id
 * (`evt_…`), the same for every delivery of the event.
 */
export function deliveryHeaders(attempt: {
  userAgent: string;
  eventType: string;
  deliveryId: string;
  /** A test delivery (sendWebhookTestEvent, Send example, or a resend of one): its envelope says `test: true`. */
  test: boolean;
  /** The event's id as the envelope carries it (`evt_…`). */
  eventId: string;
  /** Every secret that signs now, newest first. */
  secrets: readonly string[];
  attemptedAt: Date;
  body: string;
}): Record<string, string> {
  return {
    "Content-Type": "application/json",
    "User-Agent": attempt.userAgent,
    "X-Service-Review-Event": attempt.eventType,
    "X-Service-Review-Delivery": attempt.deliveryId,
    ...(attempt.test ? { [TEST_HEADER]: "true" } : {}),
    ...signatureHeaders(attempt.secrets, {
      id: attempt.eventId,
      timestamp: Math.floor(attempt.attemptedAt.getTime() / 1000),
      body: attempt.body,
    }),
  };
}

/** How a delivery's handling ended: handled (sent, recorded, or left alone), or not started because the worker stopped. */
export type Handled = "handled" | "not started";

/** Reads and records in flight at once from one worker: further ones go together in the next (worker/batches.ts). */
const READS_IN_FLIGHT = 2;
const RECORDS_IN_FLIGHT = 2;
/** The most deliveries read, or attempts recorded, in one statement. */
const LARGEST_BATCH = 200;

export interface DeliveryHandler {
  /** The deliver_webhook task. */
  task: Task<"deliver_webhook">;
  /**
   * One delivery handled as a deliver_webhook job for `payload` would handle it, in a span of its own;
   * `delivery` is the delivery as read for it already (a deliver_webhooks job reads its event's together).
   */
  handle(
    payload: DeliverWebhookPayload,
    helpers: Parameters<Task<"deliver_webhook">>[1],
    delivery?: DeliveryToSend,
  ): Promise<Handled>;
  /** Reads deliveries for handle(), together. */
  read(tenantId: string, deliveryIds: readonly string[]): Promise<(DeliveryToSend | undefined)[]>;
}

/**
 * `wakeUps` nudges the worker when a paced delivery falls due; `stopping` fires when the worker stops (a
 * record waiting for the database gives up then). `limits` bounds the attempts in flight (worker/fairness.ts
 * SendLimits; by default the configuration's WORKER_MAX_SENDS and WEBHOOK_MAX_SENDS_PER_ENDPOINT).
 */
export function deliverWebhook(
  services: Services,
  settings: SendSettings = sendSettings(services.config.webhooks, services.config.sends.perWorker),
  wakeUps?: WakeUps,
  stopping?: AbortSignal,
  limits: SendLimits = new SendLimits(services.config.sends),
): DeliveryHandler {
  const { maxAttempts, retryWaitsSeconds, disableAfterFailedDeliveries, disableAfterFailingDays } =
    services.config.webhooks;
  const health = { disableAfterFailedDeliveries, disableAfterFailingDays };
  const userAgent = `integrator-api-webhooks/${services.version}`;
  // A subscription's secret opened once, kept by its sealed text (a new secret is new text).
  const openSecret = boundedMemo((sealed) => services.secretBox.open(sealed));
  /** The previous secrets that open with the current ENCRYPTION_KEY (one that does not is skipped: the current secret still signs). */
  const openPreviousSecrets = (sealed: readonly string[]): string[] =>
    sealed.flatMap((value) => {
      try {
        return [openSecret(value)];
      } catch {
        return [];
      }
    });
  const reads = new Batches<{ tenantId: string; deliveryId: string }, DeliveryToSend | undefined>(
    (wanted) => findDeliveriesToSend(services.db, wanted),
    { inFlight: READS_IN_FLIGHT, largest: LARGEST_BATCH },
  );
  const records = new Batches<{ attempt: AttemptRecord; trace?: TraceContext | undefined }, boolean>(
    (recorded) => recordAttempts(services.db, recorded),
    { inFlight: RECORDS_IN_FLIGHT, largest: LARGEST_BATCH },
  );
  const handle: DeliveryHandler["handle"] = (payload, helpers, known) =>
    // One span per delivery handled (a deliver_webhooks job handles several): its read, the attempt's
    // request and the recorded outcome are its children.
    inSpan(
      "deliver webhook",
      { attributes: { "integrator.tenant_id": payload.tenant_id, "integrator.delivery_id": payload.delivery_id } },
      (span) => deliver(payload, helpers, span, known),
    );
  const task: Task<"deliver_webhook"> = async (payload, helpers) => {
    if (!isDeliverWebhookPayload(payload)) {
      helpers.logger.error(`deliver_webhook job ${helpers.job.id} has a malformed payload; dropped`);
      return;
    }
    // Stopping before its attempt started: the job runs again later, its attempt unspent.
    if ((await handle(payload, helpers)) === "not started") throw new Error("not started before the worker stopped");
  };
  return {
    task,
    handle,
    read: (tenantId, deliveryIds) => Promise.all(deliveryIds.map((deliveryId) => reads.run({ tenantId, deliveryId }))),
  };

  async function deliver(
    payload: DeliverWebhookPayload,
    helpers: Parameters<Task<"deliver_webhook">>[1],
    span: SpanHandle | undefined,
    known: DeliveryToSend | undefined,
  ): Promise<Handled> {
    const { db } = services;
    const delivery = known ?? (await reads.run({ tenantId: payload.tenant_id, deliveryId: payload.delivery_id }));
    if (!delivery || delivery.status !== "pending") return "handled";
    span?.setAttributes({
      "integrator.subscription_id": delivery.subscription_id,
      "integrator.event_id": eventIdOf(delivery.event_id),
      "integrator.event_type": delivery.event_type,
      "integrator.attempt": delivery.attempts + 1,
    });
    // Queued for an attempt another run already recorded (its worker died before completing this job):
    // the job that attempt queued carries the next one.
    if (payload.attempts !== undefined && payload.attempts !== delivery.attempts) return "handled";
    if (!delivery.subscription_active) {
      await failWithoutAttempt(db, delivery.tenant_id, delivery.id, DEACTIVATED);
      return "handled";
    }
    if (delivery.subscription_disabled) {
      const reason = delivery.subscription_disabled_by === "manual" ? MANUALLY_DISABLED : DISABLED;
      await failWithoutAttempt(db, delivery.tenant_id, delivery.id, reason);
      return "handled";
    }
    if (delivery.attempts >= maxAttempts) {
      // MAX_DELIVERY_ATTEMPTS was lowered while this delivery waited: it has had its attempts.
      await failWithoutAttempt(
        db,
        delivery.tenant_id,
        delivery.id,
        `No attempts left (MAX_DELIVERY_ATTEMPTS is ${maxAttempts})`,
      );
      return "handled";
    }

    /**
     * The subscription's rate limit, right before the attempt: false when the delivery's job was moved to
     * its turn (this run then leaves it).
     */
    const paced = async (): Promise<boolean> => {
      if (delivery.rate_limit_per_second === null) return true;
      const waitMs = await paceDelivery(
        db,
        {
          tenantId: delivery.tenant_id,
          subscriptionId: delivery.subscription_id,
          deliveryId: delivery.id,
          attempts: delivery.attempts,
          rate: delivery.rate_limit_per_second,
        },
        payload.pacing_generation,
      );
      if (waitMs === undefined) return true;
      wakeUps?.after(waitMs);
      return false;
    };

    let secret: string;
    try {
      secret = openSecret(delivery.secret_encrypted);
    } catch {
      // Sealed under another ENCRYPTION_KEY: no attempt could ever be signed, so do not leave it pending.
      helpers.logger.error(
        `deliver_webhook: the secret of delivery ${delivery.id}'s subscription cannot be opened with the current ENCRYPTION_KEY`,
      );
      await failWithoutAttempt(
        db,
        delivery.tenant_id,
        delivery.id,
        "The subscription's signing secret could not be read; the delivery was not sent",
      );
      return "handled";
    }
    // Every secret that signs now, newest first: during a rotation's overlap window the previous one too.
    const secrets = [secret, ...openPreviousSecrets(delivery.secrets_encrypted.slice(1))];
    const body = canonicalJson(delivery.payload);
    /** The attempt's headers, signed at `at`. */
    const signedHeaders = (at: Date) =>
      deliveryHeaders({
        userAgent,
        eventType: delivery.event_type,
        deliveryId: delivery.id,
        test: delivery.payload.test === true,
        eventId: eventIdOf(delivery.event_id),
        secrets,
        attemptedAt: at,
        body,
      });

    /** Records the attempt's outcome: delivered, failed for good, or failed with its retry queued. */
    const recordOutcome = async (outcome: SendOutcome, attemptedAt: Date, health: HealthRules): Promise<void> => {
      if (!outcome.delivered) {
        // The tenant sees the coarse class; the detail (addresses, error codes) stays in our logs.
        services.logger.info(
          {
            delivery_id: delivery.id,
            tenant: delivery.tenant_id,
            failure: outcome.errorMessage,
            detail: outcome.detail,
          },
          "webhook attempt failed",
        );
      }

      const attempt = delivery.attempts + 1;
      const common = {
        tenantId: delivery.tenant_id,
        deliveryId: delivery.id,
        attemptsBefore: delivery.attempts,
        attemptedAt,
        durationMs: outcome.durationMs,
        responseCode: outcome.responseCode,
        errorClass: outcome.delivered ? null : outcome.errorClass,
        failure: outcome.delivered ? null : outcome.errorSentence,
        requestHeaders: outcome.requestHeaders,
        response: outcome.response,
        health,
      };
      // With tracing on, a retry's job continues this delivery's trace.
      const trace = currentTraceCarrier();
      const record = (recorded: AttemptRecord) =>
        whileDatabaseAway(() => records.run({ attempt: recorded, trace }), {
          ...(stopping ? { stopping } : {}),
          onWait: () =>
            services.logger.warn(
              { delivery_id: delivery.id, tenant: delivery.tenant_id },
              "webhook attempt sent while the database is away; its record waits for the database",
            ),
        });
      if (outcome.delivered) {
        await record({ ...common, status: "delivered", errorMessage: null });
        recordDeliveryOutcome("delivered");
      } else if (attempt >= maxAttempts) {
        await record({ ...common, status: "failed", errorMessage: outcome.errorMessage });
        recordDeliveryOutcome("failed");
      } else {
        const retryAt = new Date(Date.now() + retryDelaySeconds(attempt, retryWaitsSeconds) * 1000);
        await record({ ...common, status: "pending", errorMessage: outcome.errorMessage, retryAt });
        recordDeliveryOutcome("retrying");
      }
    };

    // A listen session (no URL): the attempt is offered to its listener, signed as it would be sent, and
    // recorded once the listener's answer (or its timeout) is in (worker/listener.ts); no run waits for it.
    if (delivery.url === null) {
      if (!(await paced())) return "handled";
      const turn = await listenTurn(db, delivery, (at) => ({
        body,
        headers: { ...signedHeaders(at), "Content-Length": String(Buffer.byteLength(body)) },
      }));
      if (turn.kind !== "answered") return "handled";
      await recordOutcome(turn.outcome, turn.attemptedAt, LISTEN_HEALTH);
      await dropListenOffer(db, delivery.tenant_id, delivery.id, turn.attempt);
      return "handled";
    }

    const url = delivery.url;
    // The attempt waits for a place among the worker's sends (per worker, per tenant, per endpoint); it
    // is paced and sent holding it, and recorded after.
    const sent = await limits.run(
      { tenant: delivery.tenant_id, endpoint: delivery.subscription_id, job: helpers.job.id },
      async (): Promise<{ outcome: SendOutcome; attemptedAt: Date } | Handled> => {
        // Stopping: what has not started waits for the job's next run, with its attempt unspent.
        if (helpers.abortSignal?.aborted) return "not started";
        if (!(await paced())) return "handled";
        const attemptedAt = new Date();
        const outcome = await inSpan(
          "POST",
          {
            kind: "client",
            attributes: () => ({
              ...attemptAttributes(url, delivery.attempts + 1),
              "integrator.tenant_id": delivery.tenant_id,
              "integrator.delivery_id": delivery.id,
              "integrator.subscription_id": delivery.subscription_id,
            }),
          },
          async (attemptSpan) => {
            const answer = await sendWebhook(
              { url, body, headers: signedHeaders(attemptedAt) },
              settings,
              helpers.abortSignal,
            );
            attemptSpan?.setAttributes({ "http.response.status_code": answer.responseCode ?? undefined });
            if (!answer.delivered) attemptSpan?.fail(answer.errorClass, answer.errorMessage);
            return answer;
          },
        );
        return { outcome, attemptedAt };
      },
    );
    if (typeof sent === "string") return sent;
    await recordOutcome(sent.outcome, sent.attemptedAt, health);
    return "handled";
  }
}

/**
 * The attempt's span attributes: the receiver's host and port, never its URL's path or query (a
 * receiver's URL can hold its secret, as Slack's do).
 */
function attemptAttributes(url: string, attempt: number): SpanAttributes {
  const target = URL.parse(url);
  return {
    "http.request.method": "POST",
    "url.scheme": target?.protocol.replace(/:$/, ""),
    "server.address": target?.hostname,
    "server.port": target ? Number(target.port || 443) : undefined,
    "integrator.attempt": attempt,
  };
}
