// Queries of the partner registry, tenant entitlements, routing decisions and partner callbacks.
// Tenant-owned rows are always addressed by tenant_id first (their keys lead with it).
import type { Knex } from "knex";
import { runPrepared } from "./prepared.ts";
import { rfc3339 } from "./timestamps.ts";
import { KEYED_WRITE_PARAMETERS, keyedWriteArguments, type KeyedOutcome, type KeyedWrite } from "./idempotency.ts";

export type PartnerStatus = "active" | "paused";

export interface PartnerRecord {
  partner_key: string;
  name: string;
  launch_url: string;
  context_keys: string[];
  status: PartnerStatus;
  created_at: string;
  updated_at: string;
}

/** A partner as the routing and callback rules need it: with its sealed secret and the tenant's entitlement. */
export interface PartnerAccess extends PartnerRecord {
  callback_secret_encrypted: string;
  entitled: boolean;
}

const PARTNER_COLUMNS = ["partner_key", "name", "launch_url", "context_keys", "status", "created_at", "updated_at"];

type Timestamped<T> = Omit<T, "created_at" | "updated_at"> & { created_at: Date; updated_at: Date };

function toPartner<T extends PartnerRecord>(row: Timestamped<T>): T {
  return { ...row, created_at: rfc3339(row.created_at), updated_at: rfc3339(row.updated_at) } as T;
}

export interface NewPartner {
  partnerKey: string;
  name: string;
  launchUrl: string;
  contextKeys: string[];
  callbackSecretEncrypted: string;
}

/** Inserts the partner; undefined when the key is taken. */
export async function insertPartner(db: Knex, partner: NewPartner): Promise<PartnerRecord | undefined> {
  const rows = await db("integrator.partners")
    .insert({
      partner_key: partner.partnerKey,
      name: partner.name,
      launch_url: partner.launchUrl,
      context_keys: partner.contextKeys,
      callback_secret_encrypted: partner.callbackSecretEncrypted,
    })
    .onConflict("partner_key")
    .ignore()
    .returning(PARTNER_COLUMNS);
  const row = rows[0] as Timestamped<PartnerRecord> | undefined;
  return row && toPartner(row);
}

export async function findPartner(db: Knex, partnerKey: string): Promise<PartnerRecord | undefined> {
  const row = (await db("integrator.partners").where({ partner_key: partnerKey }).first(PARTNER_COLUMNS)) as
    Timestamped<PartnerRecord> | undefined;
  return row && toPartner(row);
}

const PARTNER_ACCESS = `select ${PARTNER_COLUMNS.map((column) => `p.${column}`).join(", ")}, p.callback_secret_encrypted,
         exists (select 1 from integrator.partner_entitlements e where e.tenant_id = ?::uuid and e.partner_key = p.partner_key) as entitled
    from integrator.partners p
   where p.partner_key = ?`;

/**
 * The partner and whether `tenantId` is entitled to it, in one round trip; no tenant means not entitled.
 * Every launch, switch and callback reads it: a named prepared statement, planned once per connection.
 */
export async function findPartnerAccess(
  db: Knex,
  partnerKey: string,
  tenantId: string | undefined,
): Promise<PartnerAccess | undefined> {
  const { rows } = await runPrepared<Timestamped<PartnerAccess>>(db, "partner_access", PARTNER_ACCESS, [
    tenantId ?? null,
    partnerKey,
  ]);
  const row = rows[0];
  return row && toPartner<PartnerAccess>(row);
}

/** Entitles the tenant to the partner; true when it was not entitled before. */
export async function entitleTenant(db: Knex, tenantId: string, partnerKey: string): Promise<boolean> {
  const rows = await db("integrator.partner_entitlements")
    .insert({ tenant_id: tenantId, partner_key: partnerKey })
    .onConflict(["tenant_id", "partner_key"])
    .ignore()
    .returning("tenant_id");
  return rows.length > 0;
}

export async function setPartnerStatus(
  db: Knex,
  partnerKey: string,
  status: PartnerStatus,
): Promise<PartnerRecord | undefined> {
  const rows = await db("integrator.partners")
    .where({ partner_key: partnerKey })
    .update({ status, updated_at: db.fn.now() })
    .returning(PARTNER_COLUMNS);
  const row = rows[0] as Timestamped<PartnerRecord> | undefined;
  return row && toPartner(row);
}

export interface NewRoutingDecision {
  id: string;
  tenantId: string;
  kind: "launch" | "switch";
  partnerKey: string;
  result: "routed" | "denied";
  reason: "NOT_ENTITLED" | "PARTNER_PAUSED" | null;
  correlationId: string;
  returnUrl: string | null;
  expiresAt: string | null;
  createdBy: string;
  requestId: string;
}

/** The audit action recorded with a decision (in the same statement). */
export interface DecisionAudit {
  action: "partner.launch" | "partner.switch";
  details: Record<string, unknown>;
}

const RECORD_DECISION_PARAMETERS = "?::uuid, ?::uuid, ?, ?, ?, ?, ?, ?, ?::timestamptz, ?, ?, ?, ?::jsonb";
const RECORD_DECISION = `select integrator.record_routing_decision(${RECORD_DECISION_PARAMETERS})`;
const RECORD_DECISION_ONCE = `select * from integrator.record_routing_decision_once(${KEYED_WRITE_PARAMETERS}, ?, ${RECORD_DECISION_PARAMETERS})`;

function recordDecisionArguments(decision: NewRoutingDecision, audit: DecisionAudit): Knex.RawBinding[] {
  return [
    decision.tenantId,
    decision.id,
    decision.kind,
    decision.partnerKey,
    decision.result,
    decision.reason,
    decision.correlationId,
    decision.returnUrl,
    decision.expiresAt,
    decision.createdBy,
    decision.requestId,
    audit.action,
    JSON.stringify(audit.details),
  ];
}

/**
 * The decision and its audit action, in ONE statement (integrator.record_routing_decision,
 * db/functions/record_routing_decision.sql).
 */
export async function recordRoutingDecision(
  db: Knex,
  decision: NewRoutingDecision,
  audit: DecisionAudit,
): Promise<void> {
  await runPrepared(db, "record_routing_decision", RECORD_DECISION, recordDecisionArguments(decision, audit));
}

/**
 * The same under an Idempotency-Key, in ONE statement (integrator.record_routing_decision_once): the key's
 * lock and look-up and, when it has no response, the decision, its audit action and `body` remembered as
 * the response (200). `written` and `remembered` carry the body exactly as it is (and was) sent.
 */
export async function recordRoutingDecisionOnce(
  db: Knex,
  key: KeyedWrite,
  body: string,
  decision: NewRoutingDecision,
  audit: DecisionAudit,
): Promise<KeyedOutcome> {
  const { rows } = await runPrepared<KeyedOutcome>(db, "record_routing_decision_once", RECORD_DECISION_ONCE, [
    ...keyedWriteArguments(key),
    body,
    ...recordDecisionArguments(decision, audit),
  ]);
  return rows[0] as KeyedOutcome;
}

export interface NewPartnerCallback {
  tenantId: string;
  partnerKey: string;
  eventKey: string;
  event: string;
  payload: Record<string, unknown>;
  requestId: string;
}

/**
 * Stores the callback unless the same event (tenant, partner, event key) was stored before. A concurrent
 * twin waits on the unique index and then finds the first one's row.
 */
export async function insertCallbackOnce(
  db: Knex,
  callback: NewPartnerCallback,
): Promise<{ id: string; duplicate: boolean }> {
  const inserted = await db("integrator.partner_callbacks")
    .insert({
      tenant_id: callback.tenantId,
      partner_key: callback.partnerKey,
      event_key: callback.eventKey,
      event: callback.event,
      payload: JSON.stringify(callback.payload),
      request_id: callback.requestId,
    })
    .onConflict(["tenant_id", "partner_key", "event_key"])
    .ignore()
    .returning("id");
  const row = inserted[0] as { id: string } | undefined;
  if (row) return { id: row.id, duplicate: false };
  const existing = (await db("integrator.partner_callbacks")
    .where({ tenant_id: callback.tenantId, partner_key: callback.partnerKey, event_key: callback.eventKey })
    .first("id")) as { id: string } | undefined;
  if (!existing) throw new Error("partner callback conflicted but the first row is not visible");
  return { id: existing.id, duplicate: true };
}
