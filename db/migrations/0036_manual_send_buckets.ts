// Manual sends (test events and redeliveries) are counted per bucket: the tenant's own callers share one,
// each portal link has its own, so a link's holder cannot use up the tenant's. A manual delivery names the
// bucket it counted in; null is the tenant's own, as every delivery queued before this release counted.
// Added, not changed: an API of the previous release queues manual sends without it, in the tenant's bucket.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw("alter table integrator.webhook_deliveries add column manual_send_bucket text");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("alter table integrator.webhook_deliveries drop column manual_send_bucket");
}
