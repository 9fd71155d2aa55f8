// Scheduled (see worker/crontab.ts): removes Idempotency-Key records past their lifetime.
import type { Task } from "graphile-worker";
import type { Services } from "../../server/services.ts";
import { purgeExpiredKeys } from "../../db/idempotency.ts";

export function purgeIdempotencyKeys(services: Services): Task<"purge_idempotency_keys"> {
  return async (_payload, helpers) => {
    const purged = await purgeExpiredKeys(services.db);
    if (purged > 0) helpers.logger.info(`purged ${purged} expired idempotency keys`);
  };
}
