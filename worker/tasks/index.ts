// The worker's tasks by identifier; each lives in its own file named after the task.
import type { TaskList } from "graphile-worker";
import type { Services } from "../../server/services.ts";
import { deliverWebhook } from "./deliver_webhook.ts";
import { purgeIdempotencyKeys } from "./purge_idempotency_keys.ts";

export function taskList(services: Services): TaskList {
  return {
    deliver_webhook: deliverWebhook(services),
    purge_idempotency_keys: purgeIdempotencyKeys(services),
  };
}
