// Listen sessions (migration 0037): a tenant's webhook endpoint without a URL, a row of webhook_subscriptions
// with transport 'listen'. The worker signs each attempt of its deliveries and offers it
// (integrator.webhook_listen_offers); a poll hands offers out; the listener's answer is kept on the offer
// and the delivery's job queued, so that the worker records the attempt as it records any other. Every
// statement names its tenant (docs/decisions.md §10).
import type { Knex } from "knex";
import type { EventSelector } from "../events.ts";
import { isUuid } from "../ids.ts";
import { rfc3339 } from "../timestamps.ts";
import { JOB } from "../jobs.ts";
import { lockTenantSubscriptions } from "./subscriptions.ts";
import { type DeliveredEventKind, unsentMessageSql, unsentReason } from "./views.ts";

/** The channel on which an offer is announced (payload: `<tenant id> <session id>`), waking a waiting poll. */
export const LISTEN_OFFERS_CHANNEL = "integrator_listen_offers";

/** The error_message of a delivery still pending when its session ends. */
export const LISTEN_SESSION_ENDED = unsentReason("Listen session ended");

export interface ListenSessionView {
  id: string;
  tenant_id: string;
  events: EventSelector[];
  created_at: string;
  expires_at: string;
}

/** Why a session was not started: the tenant already has `limit` sessions that have not ended. */
export class ListenSessionLimitReached extends Error {
  override name = "ListenSessionLimitReached";
  readonly limit: number;
  constructor(limit: number) {
    super(`listen session limit ${limit} reached`);
    this.limit = limit;
  }
}

/**
 * Starts a session that ends `idleSeconds` from now unless polled, and queues the job that ends it then
 * (end_listen_session), in one transaction. Throws ListenSessionLimitReached when the tenant already has
 * `maxSessions` sessions that have not ended, counted under the lock of the tenant's subscriptions.
 */
export async function createListenSession(
  db: Knex,
  input: {
    tenantId: string;
    events: EventSelector[];
    secretSealed: string;
    createdBy: string;
    maxSessions: number;
    idleSeconds: number;
  },
): Promise<ListenSessionView> {
  return db.transaction(async (trx) => {
    await lockTenantSubscriptions(trx, input.tenantId);
    const [counted] = await trx("integrator.webhook_subscriptions")
      .where({ tenant_id: input.tenantId, transport: "listen", is_active: true })
      .andWhere("expires_at", ">", trx.fn.now())
      .count<{ count: number }[]>("* as count");
    if (Number(counted?.count ?? 0) >= input.maxSessions) throw new ListenSessionLimitReached(input.maxSessions);
    const [row] = (await trx("integrator.webhook_subscriptions")
      .insert({
        tenant_id: input.tenantId,
        transport: "listen",
        url: null,
        events: input.events,
        secret_encrypted: input.secretSealed,
        created_by: input.createdBy,
        expires_at: trx.raw("now() + make_interval(secs => ?)", [input.idleSeconds]),
      })
      .returning(["id", "tenant_id", "events", "created_at", "expires_at"])) as {
      id: string;
      tenant_id: string;
      events: EventSelector[];
      created_at: Date;
      expires_at: Date;
    }[];
    if (!row) throw new Error("the listen session insert returned no row");
    await trx.raw(
      "select graphile_worker.add_job(?, json_build_object('tenant_id', ?::uuid, 'session_id', ?::uuid), run_at => ?)",
      [JOB.endListenSession, row.tenant_id, row.id, row.expires_at],
    );
    return { ...row, created_at: rfc3339(row.created_at), expires_at: rfc3339(row.expires_at) };
  });
}

/**
 * Keeps a session that has not ended alive for at least `seconds` from now; its new end, or undefined
 * when the tenant has no such session (unknown, ended, or past its end).
 */
export async function renewListenSession(
  db: Knex,
  tenantId: string,
  sessionId: string,
  seconds: number,
): Promise<Date | undefined> {
  if (!isUuid(sessionId)) return undefined;
  const [row] = (await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, id: sessionId, transport: "listen", is_active: true })
    .andWhere("expires_at", ">", db.fn.now())
    .update({ expires_at: db.raw("greatest(expires_at, now() + make_interval(secs => ?))", [seconds]) })
    .returning("expires_at")) as { expires_at: Date }[];
  return row?.expires_at;
}

/** Whether the tenant has this session and it has not ended. */
export async function listenSessionIsLive(db: Knex, tenantId: string, sessionId: string): Promise<boolean> {
  if (!isUuid(sessionId)) return false;
  const row = (await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, id: sessionId, transport: "listen", is_active: true })
    .andWhere("expires_at", ">", db.fn.now())
    .first("id")) as { id: string } | undefined;
  return row !== undefined;
}

/**
 * A session's state for the job that ends it: whether it is active, its end, and whether that has passed by
 * the database's clock (the one its job runs by); undefined when the tenant has no such session.
 */
export async function listenSessionState(
  db: Knex,
  tenantId: string,
  sessionId: string,
): Promise<{ active: boolean; expiresAt: Date; expired: boolean } | undefined> {
  const row = (await db("integrator.webhook_subscriptions")
    .where({ tenant_id: tenantId, id: sessionId, transport: "listen" })
    .first("is_active", "expires_at", db.raw("expires_at <= now() as expired"))) as
    { is_active: boolean; expires_at: Date; expired: boolean } | undefined;
  return row ? { active: row.is_active, expiresAt: row.expires_at, expired: row.expired } : undefined;
}

/**
 * Ends a session: it takes no new events, its pending deliveries end failed without a further attempt,
 * and its offers are dropped, in one transaction. With `onlyIfExpired`, only a session past its end (a
 * poll can no longer renew it). False when the tenant has no such session (or, with `onlyIfExpired`, it is
 * not past its end); true also when it had ended already.
 */
export async function endListenSession(
  db: Knex,
  tenantId: string,
  sessionId: string,
  options: { onlyIfExpired?: boolean } = {},
): Promise<boolean> {
  if (!isUuid(sessionId)) return false;
  return db.transaction(async (trx) => {
    const query = trx("integrator.webhook_subscriptions").where({
      tenant_id: tenantId,
      id: sessionId,
      transport: "listen",
    });
    if (options.onlyIfExpired) query.andWhere("expires_at", "<=", trx.fn.now());
    const ended = await query
      .update({
        is_active: false,
        deactivated_at: trx.raw("coalesce(deactivated_at, now())"),
        expires_at: trx.raw("least(expires_at, now())"),
      })
      .returning("id");
    if (ended.length === 0) return false;
    await trx("integrator.webhook_deliveries")
      .where({ tenant_id: tenantId, subscription_id: sessionId, status: "pending" })
      .update({
        status: "failed",
        error_message: unsentMessageSql(trx, LISTEN_SESSION_ENDED),
        next_attempt_at: null,
        updated_at: trx.fn.now(),
      });
    await trx("integrator.webhook_listen_offers").where({ tenant_id: tenantId, subscription_id: sessionId }).delete();
    return true;
  });
}

/** One attempt of a delivery as a poll hands it out: the request the service would send, signed. */
export interface ListenDeliveryView {
  delivery_id: string;
  attempt: number;
  event_id: string;
  event_type: DeliveredEventKind;
  body: string;
  headers: Record<string, string>;
  offered_at: string;
  answer_by: string;
}

/**
 * Hands out at most `limit` of the session's offers that no poll has taken yet, oldest first (offers
 * another poll is taking at the same moment are skipped, not waited for).
 */
export async function takeListenOffers(
  db: Knex,
  tenantId: string,
  sessionId: string,
  limit: number,
): Promise<ListenDeliveryView[]> {
  const { rows } = await db.raw<{
    rows: {
      delivery_id: string;
      attempt: number;
      event_id: string;
      event_type: DeliveredEventKind;
      body: string;
      headers: Record<string, string>;
      offered_at: Date;
      answer_by: Date;
    }[];
  }>(
    `with next as (
       select delivery_id from integrator.webhook_listen_offers
        where tenant_id = ? and subscription_id = ? and handed_out_at is null and answer_by > now()
        order by offered_at, delivery_id
        limit ?
        for update skip locked
     ),
     taken as (
       update integrator.webhook_listen_offers o set handed_out_at = now()
         from next
        where o.tenant_id = ? and o.delivery_id = next.delivery_id
       returning o.delivery_id, o.attempt, o.body, o.headers, o.offered_at, o.answer_by
     )
     select t.delivery_id, t.attempt, 'evt_' || d.event_id as event_id, d.event_type, t.body, t.headers,
            t.offered_at, t.answer_by
       from taken t
       join integrator.webhook_deliveries d on d.tenant_id = ? and d.id = t.delivery_id
      order by t.offered_at, t.delivery_id`,
    [tenantId, sessionId, limit, tenantId, tenantId],
  );
  return rows.map((row) => ({
    ...row,
    offered_at: rfc3339(row.offered_at),
    answer_by: rfc3339(row.answer_by),
  }));
}

/** What the listener reports its receiver answered. */
export interface ListenAnswer {
  deliveryId: string;
  attempt: number;
  responseCode: number | null;
  errorClass: "timeout" | "connection_failed" | null;
  durationMs: number;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
  responseBodyTruncated: boolean;
}

/**
 * Keeps the answer on the session's offer of that delivery and attempt, if a poll handed it out and it is
 * still waiting for one (not answered, before its answer_by), and queues the delivery's job for that
 * attempt at once, in one statement: the worker records the attempt. False when no such offer waits.
 */
export async function keepListenAnswer(
  db: Knex,
  tenantId: string,
  sessionId: string,
  answer: ListenAnswer,
): Promise<boolean> {
  if (!isUuid(sessionId)) return false;
  const { rows } = await db.raw<{ rows: { queued: number }[] }>(
    `with answered as (
       update integrator.webhook_listen_offers
          set answered_at = now(), response_code = ?, error_class = ?, duration_ms = ?,
              response_headers = ?::jsonb, response_body = ?, response_body_truncated = ?
        where tenant_id = ? and delivery_id = ? and subscription_id = ? and attempt = ?
          and handed_out_at is not null and answered_at is null and answer_by > now()
       returning delivery_id
     )
     select integrator.queue_delivery_jobs(?::uuid, (select array_agg(delivery_id) from answered),
                                           integrator.delivery_backlog(?::uuid), null, ?::integer) as queued`,
    [
      answer.responseCode,
      answer.errorClass,
      answer.durationMs,
      answer.responseHeaders === null ? null : JSON.stringify(answer.responseHeaders),
      answer.responseBody,
      answer.responseBodyTruncated,
      tenantId,
      answer.deliveryId,
      sessionId,
      answer.attempt,
      tenantId,
      tenantId,
      answer.attempt - 1,
    ],
  );
  return (rows[0]?.queued ?? 0) > 0;
}

/** An offer as the worker reads it back. */
export interface ListenOffer {
  attempt: number;
  headers: Record<string, string>;
  offeredAt: Date;
  answerBy: Date;
  /** answer_by has passed by the database's clock, the one its timeout job runs by. */
  due: boolean;
  handedOutAt: Date | null;
  answeredAt: Date | null;
  responseCode: number | null;
  errorClass: "timeout" | "connection_failed" | null;
  durationMs: number | null;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
  responseBodyTruncated: boolean;
}

/** The delivery's offer, if there is one. */
export async function findListenOffer(
  db: Knex,
  tenantId: string,
  deliveryId: string,
): Promise<ListenOffer | undefined> {
  const row = (await db("integrator.webhook_listen_offers")
    .where({ tenant_id: tenantId, delivery_id: deliveryId })
    .first(
      "attempt",
      "headers",
      "offered_at",
      "answer_by",
      db.raw("answer_by <= now() as due"),
      "handed_out_at",
      "answered_at",
      "response_code",
      "error_class",
      "duration_ms",
      "response_headers",
      "response_body",
      "response_body_truncated",
    )) as
    | {
        attempt: number;
        headers: Record<string, string>;
        offered_at: Date;
        answer_by: Date;
        due: boolean;
        handed_out_at: Date | null;
        answered_at: Date | null;
        response_code: number | null;
        error_class: "timeout" | "connection_failed" | null;
        duration_ms: number | null;
        response_headers: Record<string, string> | null;
        response_body: string | null;
        response_body_truncated: boolean;
      }
    | undefined;
  if (!row) return undefined;
  return {
    attempt: row.attempt,
    headers: row.headers,
    offeredAt: row.offered_at,
    answerBy: row.answer_by,
    due: row.due,
    handedOutAt: row.handed_out_at,
    answeredAt: row.answered_at,
    responseCode: row.response_code,
    errorClass: row.error_class,
    durationMs: row.duration_ms,
    responseHeaders: row.response_headers,
    responseBody: row.response_body,
    responseBodyTruncated: row.response_body_truncated,
  };
}

/**
 * Offers attempt `attemptsBefore + 1` of a pending delivery to its session, in one statement: the offer
 * (replacing one of an earlier attempt), the job that records a timeout at `answerBy` should no answer
 * come (queue_delivery_jobs, for this attempt), and the notification that wakes a waiting poll. Nothing
 * happens when the delivery has moved on or its session has ended (the session's row is read FOR SHARE, so
 * an end waits for the offer, or the offer for the end). True when it was offered.
 */
export async function offerToListener(
  db: Knex,
  offer: {
    tenantId: string;
    deliveryId: string;
    attemptsBefore: number;
    body: string;
    headers: Record<string, string>;
    offeredAt: Date;
    answerBy: Date;
  },
): Promise<boolean> {
  const { rows } = await db.raw<{ rows: { offered: number }[] }>(
    `with target as (
       select d.tenant_id, d.id, d.subscription_id
         from integrator.webhook_deliveries d
         join integrator.webhook_subscriptions s on s.tenant_id = d.tenant_id and s.id = d.subscription_id
        where d.tenant_id = ? and d.id = ? and d.status = 'pending' and d.attempts = ?
          and s.transport = 'listen' and s.is_active
        for share of s
     ),
     offered as (
       insert into integrator.webhook_listen_offers
              (tenant_id, delivery_id, subscription_id, attempt, body, headers, offered_at, answer_by)
       select tenant_id, id, subscription_id, ?, ?, ?::jsonb, ?, ? from target
       on conflict (tenant_id, delivery_id) do update
          set attempt = excluded.attempt, body = excluded.body, headers = excluded.headers,
              offered_at = excluded.offered_at, answer_by = excluded.answer_by, handed_out_at = null,
              answered_at = null, response_code = null, error_class = null, duration_ms = null,
              response_headers = null, response_body = null, response_body_truncated = false
        where integrator.webhook_listen_offers.attempt < excluded.attempt
       returning tenant_id, delivery_id, subscription_id
     )
     select count(*)::int as offered,
            count(integrator.queue_delivery_jobs(o.tenant_id, array[o.delivery_id],
                                                 integrator.delivery_backlog(o.tenant_id), ?::timestamptz, ?::integer)),
            count(pg_notify(?, o.tenant_id || ' ' || o.subscription_id))
       from offered o`,
    [
      offer.tenantId,
      offer.deliveryId,
      offer.attemptsBefore,
      offer.attemptsBefore + 1,
      offer.body,
      JSON.stringify(offer.headers),
      offer.offeredAt,
      offer.answerBy,
      offer.answerBy,
      offer.attemptsBefore,
      LISTEN_OFFERS_CHANNEL,
    ],
  );
  return (rows[0]?.offered ?? 0) > 0;
}

/** Drops the delivery's offer of `attempt` once the worker has recorded that attempt. */
export async function dropListenOffer(db: Knex, tenantId: string, deliveryId: string, attempt: number): Promise<void> {
  await db("integrator.webhook_listen_offers")
    .where({ tenant_id: tenantId, delivery_id: deliveryId, attempt })
    .delete();
}
