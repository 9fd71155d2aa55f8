// The worker's tasks by identifier; each lives in its own file named after the task. The type makes the
// list complete: every job db/jobs.ts declares needs its task here, with the declared payload.
import type { Task } from "graphile-worker";
import type { JobName } from "../../db/jobs.ts";
import type { Services } from "../../foundation/services.ts";
import { deliverWebhook } from "./deliver_webhook.ts";
import { deliverWebhooks } from "./deliver_webhooks.ts";
import { endListenSessionTask } from "./end_listen_session.ts";
import type { WakeUps } from "../pacing.ts";
import { purgeIdempotencyKeys } from "./purge_idempotency_keys.ts";
import { purgeWebhookDeliveries } from "./purge_webhook_deliveries.ts";
import { tracingIsOn } from "../../foundation/tracing.ts";
import { traced } from "../job-spans.ts";

export type Tasks = { [N in JobName]: Task<N> };

/**
 * `lockRenewalMs`: how often a running deliver_webhooks job renews its lock, at most (tests shorten it).
 * `wakeUps`: wakes the worker when a delivery paced by its subscription's rate limit falls due (without
 * it, the worker's poll finds it). `stopping`: fires when the worker stops (an attempt's record waiting
 * for the database gives up then).
 */
export function taskList(
  services: Services,
  options: { lockRenewalMs?: number; wakeUps?: WakeUps; stopping?: AbortSignal } = {},
): Tasks {
  const deliveries = deliverWebhook(services, undefined, options.wakeUps, options.stopping);
  // With tracing on, each job runs in a span of its own (worker/job-spans.ts).
  const span = tracingIsOn() ? traced : <N extends JobName>(_name: N, task: Task<N>) => task;
  return {
    deliver_webhook: span("deliver_webhook", deliveries.task),
    deliver_webhooks: span("deliver_webhooks", deliverWebhooks(services, deliveries, options.lockRenewalMs)),
    end_listen_session: span("end_listen_session", endListenSessionTask(services)),
    purge_idempotency_keys: span("purge_idempotency_keys", purgeIdempotencyKeys(services)),
    purge_webhook_deliveries: span("purge_webhook_deliveries", purgeWebhookDeliveries(services)),
  };
}
