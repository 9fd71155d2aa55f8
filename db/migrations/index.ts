// The ordered list of migrations. knex records each by name in integrator.knex_migrations.
import type { Knex } from "knex";
import * as accountProtection from "./0008_account_protection.ts";
import * as deliveryAttemptFunctions from "./0018_delivery_attempt_functions.ts";
import * as emitEventCachedPlans from "./0019_emit_event_cached_plans.ts";
import * as deliveryJobsCarryTheirAttempt from "./0021_delivery_jobs_carry_their_attempt.ts";
import * as queuedJobsNameTheirAttempt from "./0022_queued_jobs_name_their_attempt.ts";
import * as anEventsDeliveriesInOneJob from "./0023_an_event_s_deliveries_in_one_job.ts";
import * as submissionsListedNewestFirst from "./0024_submissions_listed_newest_first.ts";
import * as emitEventOneAddJobs from "./0016_emit_event_one_add_jobs.ts";
import * as canonicalWebhookUrls from "./0028_canonical_webhook_urls.ts";
import * as signingKeyRevocation from "./0029_signing_key_revocation.ts";
import * as webhookSubscriptionDescription from "./0030_webhook_subscription_description.ts";
import * as intakeItemsKeyedByTenant from "./0031_intake_items_keyed_by_tenant.ts";
import * as idempotencyKeysExpireByTenant from "./0032_idempotency_keys_expire_by_tenant.ts";
import * as webhookRateLimits from "./0033_webhook_rate_limits.ts";
import * as foundation from "./0001_foundation.ts";
import * as idempotencyExactBytes from "./0009_idempotency_exact_bytes.ts";
import * as intake from "./0002_intake.ts";
import * as intakeItemsKeyedById from "./0020_intake_items_keyed_by_id.ts";
import * as intakeWithKey from "./0014_intake_with_key.ts";
import * as partners from "./0004_partners.ts";
import * as routingDecisionInOneStatement from "./0017_routing_decision_in_one_statement.ts";
import * as rateLimits from "./0005_rate_limits.ts";
import * as webhookEngine from "./0006_webhook_engine.ts";
import * as webhookEngineAfterOperations from "./0013_webhook_engine_emit.ts";
import * as webhookManualDisable from "./0015_webhook_manual_disable.ts";
import * as webhookOperations from "./0007_webhook_operations.ts";
import * as webhooks from "./0003_webhooks.ts";
import * as webhookEvents from "./0025_webhook_events.ts";
import * as deliveryNextAttempt from "./0026_delivery_next_attempt.ts";
import * as attemptDetails from "./0027_attempt_details.ts";
import * as writePath from "./0010_write_path.ts";
import * as replacedFunctionsDropped from "./0034_replaced_functions_dropped.ts";
import * as retiredPortalCredentials from "./0035_retired_portal_credentials.ts";
import * as manualSendBuckets from "./0036_manual_send_buckets.ts";
import * as deliveryAttemptsBySubscription from "./0037_delivery_attempts_by_subscription.ts";
import * as webhookListenSessions from "./0038_webhook_listen_sessions.ts";

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const migrations: [string, Migration][] = [
  ["0001_foundation", foundation],
  ["0002_intake", intake],
  ["0003_webhooks", webhooks],
  ["0004_partners", partners],
  ["0005_rate_limits", rateLimits],
  ["0006_webhook_engine", webhookEngine],
  ["0007_webhook_operations", webhookOperations],
  ["0008_account_protection", accountProtection],
  ["0009_idempotency_exact_bytes", idempotencyExactBytes],
  ["0010_write_path", writePath],
  // After 0007, which replaced emit_event again: its version, queueing through queue_delivery_job
  // (0016 queues an event's jobs in one add_jobs).
  ["0013_webhook_engine_emit", webhookEngineAfterOperations],
  ["0014_intake_with_key", intakeWithKey],
  ["0015_webhook_manual_disable", webhookManualDisable],
  ["0016_emit_event_one_add_jobs", emitEventOneAddJobs],
  ["0017_routing_decision_in_one_statement", routingDecisionInOneStatement],
  ["0018_delivery_attempt_functions", deliveryAttemptFunctions],
  ["0019_emit_event_cached_plans", emitEventCachedPlans],
  ["0020_intake_items_keyed_by_id", intakeItemsKeyedById],
  ["0021_delivery_jobs_carry_their_attempt", deliveryJobsCarryTheirAttempt],
  ["0022_queued_jobs_name_their_attempt", queuedJobsNameTheirAttempt],
  ["0023_an_event_s_deliveries_in_one_job", anEventsDeliveriesInOneJob],
  ["0024_submissions_listed_newest_first", submissionsListedNewestFirst],
  ["0025_webhook_events", webhookEvents],
  ["0026_delivery_next_attempt", deliveryNextAttempt],
  ["0027_attempt_details", attemptDetails],
  ["0028_canonical_webhook_urls", canonicalWebhookUrls],
  ["0029_signing_key_revocation", signingKeyRevocation],
  ["0030_webhook_subscription_description", webhookSubscriptionDescription],
  ["0031_intake_items_keyed_by_tenant", intakeItemsKeyedByTenant],
  ["0032_idempotency_keys_expire_by_tenant", idempotencyKeysExpireByTenant],
  ["0033_webhook_rate_limits", webhookRateLimits],
  ["0034_replaced_functions_dropped", replacedFunctionsDropped],
  ["0035_retired_portal_credentials", retiredPortalCredentials],
  ["0036_manual_send_buckets", manualSendBuckets],
  ["0037_delivery_attempts_by_subscription", deliveryAttemptsBySubscription],
  ["0038_webhook_listen_sessions", webhookListenSessions],
];

export const migrationSource: Knex.MigrationSource<[string, Migration]> = {
  getMigrations: async () => migrations,
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};
