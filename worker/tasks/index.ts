// The worker's tasks by identifier; each lives in its own file named after the task.
import type { TaskList } from "graphile-worker";
import type { Services } from "../../src/services.ts";
import { purgeIdempotencyKeys } from "./purge_idempotency_keys.ts";

export function taskList(services: Services): TaskList {
  return {
    purge_idempotency_keys: purgeIdempotencyKeys(services),
  };
}
