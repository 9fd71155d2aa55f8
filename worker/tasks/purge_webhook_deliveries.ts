// Scheduled (see worker/crontab.ts): purges final deliveries, with their attempts, created more than
// WEBHOOK_RETENTION_DAYS ago. Tenant by tenant, WEBHOOK_PURGE_BATCH_SIZE rows per statement (each its
// own short transaction, skipping rows others hold), lowering each tenant's exact delivery count in the
// same statement. Stops early when the worker shuts down; the next run carries on.
import type { Task } from "graphile-worker";
import type { Services } from "../../server/services.ts";
import { purgeDeliveriesBatch, tenantsWithDeliveries } from "../../db/webhooks.ts";
import { JOB } from "../../db/jobs.ts";

export function purgeWebhookDeliveries(services: Services): Task<"purge_webhook_deliveries"> {
  const { retentionDays, purgeBatchSize } = services.config.webhooks;
  const log = services.logger.child({ component: "worker", task: JOB.purgeWebhookDeliveries });
  return async (_payload, helpers) => {
    let purged = 0;
    let stopped = false;
    tenants: for (const tenantId of await tenantsWithDeliveries(services.db)) {
      for (;;) {
        if (helpers.abortSignal?.aborted) {
          stopped = true;
          break tenants;
        }
        const batch = await purgeDeliveriesBatch(services.db, tenantId, retentionDays, purgeBatchSize);
        purged += batch;
        if (batch < purgeBatchSize) break;
      }
    }
    // Every run says what it removed, none included, and whether the worker's stop cut it short.
    log.info(
      { purged, retention_days: retentionDays, ...(stopped ? { stopped_early: true } : {}) },
      `purged ${purged} webhook deliveries older than ${retentionDays} days${stopped ? " (stopped early)" : ""}`,
    );
  };
}
