// Recurring jobs, in graphile-worker's crontab syntax.
export const crontab = [
  // Every 15 minutes; expired keys are already ignored by lookups, this only reclaims space.
  "*/15 * * * * purge_idempotency_keys ?max=1",
].join("\n");
