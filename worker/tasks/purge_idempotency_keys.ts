// Scheduled (see worker/crontab.ts): removes Idempotency-Key records past their lifetime.
import type { Task } from "graphile-worker";
import type { Services } from "../../foundation/services.ts";
import { purgeExpiredKeys } from "../../db/idempotency.ts";
import { JOB } from "../../db/jobs.ts";

export function purgeIdempotencyKeys(services: Services): Task<"purge_idempotency_keys"> {
  const log = services.logger.child({ component: "worker", task: JOB.purgeIdempotencyKeys });
  return async () => {
    const purged = await purgeExpiredKeys(services.db);
    // Every run says what it removed, none included: the log shows the purge runs.
    log.info({ purged }, `purged ${purged} expired idempotency keys`);
  };
}
