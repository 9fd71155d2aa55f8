// The retention purge of old deliveries and events, in batches per tenant.
import type { Knex } from "knex";

/**
 * Deletes at most `batchSize` of the tenant's final deliveries created more than `retentionDays` ago
 * (their attempts go with them; the count trigger lowers the tenant's total) in one short statement. Rows
 * another transaction holds are skipped, not waited for. Pending deliveries are never purged.
 * Returns how many were deleted.
 */
export async function purgeDeliveriesBatch(
  db: Knex,
  tenantId: string,
  retentionDays: number,
  batchSize: number,
): Promise<number> {
  const result = await db.raw<{ rows: { purged: number }[] }>(
    `with doomed as (
       select id from integrator.webhook_deliveries
        where tenant_id = ? and created_at < now() - make_interval(days => ?) and status <> 'pending'
        order by created_at, id
        limit ?
        for update skip locked
     ),
     deleted as (
       delete from integrator.webhook_deliveries d using doomed
        where d.tenant_id = ? and d.id = doomed.id
       returning d.id
     )
     select count(*)::int as purged from deleted`,
    [tenantId, retentionDays, batchSize, tenantId],
  );
  return result.rows[0]?.purged ?? 0;
}

/**
 * Deletes at most `batchSize` of the tenant's events created more than `retentionDays` ago of which no
 * delivery is left (run after purgeDeliveriesBatch: an event goes with the last of its deliveries, and
 * stays while a resend of it is kept). Rows another transaction holds are skipped. Returns how many.
 */
export async function purgeEventsBatch(
  db: Knex,
  tenantId: string,
  retentionDays: number,
  batchSize: number,
): Promise<number> {
  const result = await db.raw<{ rows: { purged: number }[] }>(
    `with doomed as (
       select e.id from integrator.webhook_events e
        where e.tenant_id = ? and e.created_at < now() - make_interval(days => ?)
          and not exists (select 1 from integrator.webhook_deliveries d
                           where d.tenant_id = e.tenant_id and d.event_id = e.id)
        order by e.created_at, e.id
        limit ?
        for update skip locked
     ),
     deleted as (
       delete from integrator.webhook_events e using doomed
        where e.tenant_id = ? and e.id = doomed.id
       returning e.id
     )
     select count(*)::int as purged from deleted`,
    [tenantId, retentionDays, batchSize, tenantId],
  );
  return result.rows[0]?.purged ?? 0;
}
