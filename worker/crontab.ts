// Recurring jobs, in graphile-worker's crontab syntax.
import { JOB } from "../db/jobs.ts";

export const crontab = [
  // Every 15 minutes; expired keys are already ignored by lookups, this only reclaims space.
  `*/15 * * * * ${JOB.purgeIdempotencyKeys} ?max=1`,
  // Hourly at minute 7; each run works in small batches until nothing is past WEBHOOK_RETENTION_DAYS.
  `7 * * * * ${JOB.purgeWebhookDeliveries} ?max=1`,
].join("\n");
