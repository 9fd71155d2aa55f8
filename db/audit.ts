// The tenant-scoped audit trail. Written inside the transaction of the action it records.
import type { Knex } from "knex";
import { rfc3339 } from "./timestamps.ts";

/**
 * The tenant_id of the service's own actions, which belong to no tenant (admin signing-key:rotate): the nil
 * UUID, which no tenant has (tenants get UUIDv7s). `admin audit:list --tenant` with it lists them.
 */
export const SERVICE_AUDIT_TENANT_ID = "00000000-0000-0000-0000-000000000000";

export interface AuditEntry {
  tenantId: string;
  action: string;
  actor: string;
  resourceType: string;
  resourceId: string;
  requestId: string | undefined;
  details?: Record<string, unknown>;
}

export interface AuditRecord {
  id: string;
  action: string;
  tenant_id: string;
  actor: string;
  resource_type: string;
  resource_id: string;
  request_id: string | null;
  details: Record<string, unknown> | null;
  created_at: string;
}

export async function recordAudit(db: Knex, entry: AuditEntry): Promise<void> {
  await db("integrator.audit_actions").insert({
    tenant_id: entry.tenantId,
    action: entry.action,
    actor: entry.actor,
    resource_type: entry.resourceType,
    resource_id: entry.resourceId,
    request_id: entry.requestId ?? null,
    details: entry.details ?? null,
  });
}

export async function listAudit(db: Knex, tenantId: string, action?: string): Promise<AuditRecord[]> {
  const rows = await db("integrator.audit_actions")
    .where({ tenant_id: tenantId, ...(action ? { action } : {}) })
    .orderBy([
      { column: "created_at", order: "asc" },
      { column: "id", order: "asc" },
    ])
    .select(
      "id",
      "action",
      "tenant_id",
      "actor",
      "resource_type",
      "resource_id",
      "request_id",
      "details",
      "created_at",
    );
  return rows.map((row: Omit<AuditRecord, "created_at"> & { created_at: Date }) => ({
    ...row,
    created_at: rfc3339(row.created_at),
  }));
}
