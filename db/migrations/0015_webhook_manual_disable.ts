// Issue 15 (the portal's disable button): a subscription is disabled by endpoint health or by hand.
// disabled_by records which, so the worker can say why a delivery was not sent; existing disabled
// subscriptions were disabled by endpoint health (the only way there was).
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.webhook_subscriptions
      add column disabled_by text check (disabled_by in ('endpoint_health', 'manual'));
    update integrator.webhook_subscriptions set disabled_by = 'endpoint_health' where disabled_at is not null;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("alter table integrator.webhook_subscriptions drop column if exists disabled_by");
}
