// deliver_webhooks: an event's deliveries in one job (queued by integrator.emit_event when an event
// matches several subscriptions, through db/functions/queue_delivery_jobs.sql). The deliveries are read
// together, in one statement, and each is then handled exactly as a deliver_webhook job for its attempt
// would handle it (DeliveryHandler.handle): sent, recorded, its retry queued as a job of its own; a
// delivery no longer at the job's attempt (sent by an earlier run of this job) is left alone.
// They send concurrently, within the worker's bounds on attempts in flight (worker/fairness.ts
// SendLimits: per worker, per tenant, per endpoint), and the job's lock is renewed as its deliveries end
// (at most every LOCK_RENEWAL_MS), so the health check tells a job making progress from a stuck one. The
// job fails, and graphile-worker runs it again later, when the handling of one of its deliveries failed
// or the worker stopped before starting some; the rerun sends only what is still at the job's attempt.
import type { Task } from "graphile-worker";
import { isDeliverWebhooksPayload } from "../../db/jobs.ts";
import { renewJobLock } from "../../db/job-queue.ts";
import type { Services } from "../../foundation/services.ts";
import { errorMessage } from "../../foundation/error-message.ts";
import type { DeliveryHandler } from "./deliver_webhook.ts";

/** How often, at most, a running deliver_webhooks job renews its lock (well inside the 5 minutes that make a job overdue). */
export const LOCK_RENEWAL_MS = 30_000;

export function deliverWebhooks(
  services: Services,
  deliveries: DeliveryHandler,
  lockRenewalMs = LOCK_RENEWAL_MS,
): Task<"deliver_webhooks"> {
  return async (payload, helpers) => {
    if (!isDeliverWebhooksPayload(payload)) {
      helpers.logger.error(`deliver_webhooks job ${helpers.job.id} has a malformed payload; dropped`);
      return;
    }
    const { tenant_id, attempts } = payload;
    const { id: jobId, locked_by: lockedBy } = helpers.job;
    let renewedAt = performance.now();
    const progressed = async () => {
      if (lockedBy === null || performance.now() - renewedAt < lockRenewalMs) return;
      renewedAt = performance.now();
      await renewJobLock(services.db, jobId, lockedBy).catch(() => undefined);
    };
    const deliveryIds = [...new Set(payload.delivery_ids)];
    const found = await deliveries.read(tenant_id, deliveryIds);
    let notStarted = 0;
    const failures: string[] = [];
    await Promise.all(
      deliveryIds.map(async (delivery_id, index) => {
        try {
          const handled = await deliveries.handle({ tenant_id, delivery_id, attempts }, helpers, found[index]);
          if (handled === "not started") notStarted++;
        } catch (error) {
          failures.push(`${delivery_id}: ${errorMessage(error)}`);
        }
        await progressed();
      }),
    );
    if (failures.length > 0 || notStarted > 0)
      throw new Error(
        [
          failures.length > 0 ? `${failures.length} deliveries failed to be handled (${failures.join("; ")})` : "",
          notStarted > 0 ? `${notStarted} not started before the worker stopped` : "",
        ]
          .filter(Boolean)
          .join("; "),
      );
  };
}
