// Scheduled (see worker/crontab.ts): purges final deliveries, with their attempts, created more than
// WEBHOOK_RETENTION_DAYS ago, then the events of that age of which no delivery is left (an event goes
// with the last of its deliveries). Tenant by tenant (every tenant's id from integrator.tenants; each
// statement names its tenant, as under Citus it must), WEBHOOK_PURGE_BATCH_SIZE rows per statement (each
// its own short transaction, skipping rows others hold), lowering each tenant's exact delivery count in
// the same statement. Stops early when the worker shuts down; the next run carries on.
import type { Task } from "graphile-worker";
import type { Services } from "../../foundation/services.ts";
import { purgeDeliveriesBatch, purgeEventsBatch } from "../../db/webhooks/retention.ts";
import { tenantIds } from "../../db/principals.ts";
import { JOB } from "../../db/jobs.ts";

export function purgeWebhookDeliveries(services: Services): Task<"purge_webhook_deliveries"> {
  const { retentionDays, purgeBatchSize } = services.config.webhooks;
  const log = services.logger.child({ component: "worker", task: JOB.purgeWebhookDeliveries });
  return async (_payload, helpers) => {
    let purged = 0;
    let purgedEvents = 0;
    let stopped = false;
    tenants: for (const tenantId of await tenantIds(services.db)) {
      for (const [purge, count] of [
        [purgeDeliveriesBatch, (batch: number) => (purged += batch)],
        [purgeEventsBatch, (batch: number) => (purgedEvents += batch)],
      ] as const) {
        for (;;) {
          if (helpers.abortSignal?.aborted) {
            stopped = true;
            break tenants;
          }
          const batch = await purge(services.db, tenantId, retentionDays, purgeBatchSize);
          count(batch);
          if (batch < purgeBatchSize) break;
        }
      }
    }
    // Every run says what it removed, none included, and whether the worker's stop cut it short.
    log.info(
      {
        purged,
        purged_events: purgedEvents,
        retention_days: retentionDays,
        ...(stopped ? { stopped_early: true } : {}),
      },
      `purged ${purged} webhook deliveries and ${purgedEvents} events older than ${retentionDays} days${stopped ? " (stopped early)" : ""}`,
    );
  };
}
