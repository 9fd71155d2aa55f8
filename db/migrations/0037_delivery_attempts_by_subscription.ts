// Each delivery attempt names its subscription, so that an endpoint's health (its newest attempts of the
// last 24 hours, GET /v1/webhooks/subscriptions) is read from one index range instead of every delivery
// of the subscription. integrator.record_delivery_attempt fills it from this release on; the attempts of
// the last 24 hours are filled here, the older ones stay null (no health reads them, and the purge takes
// them in time). Nullable: a worker of the previous release records attempts through the function text
// this release applies, so every new row has it.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.webhook_delivery_attempts add column subscription_id uuid;
    update integrator.webhook_delivery_attempts a
       set subscription_id = d.subscription_id
      from integrator.webhook_deliveries d
     where d.tenant_id = a.tenant_id and d.id = a.delivery_id
       and a.attempted_at > now() - interval '24 hours';
    create index webhook_delivery_attempts_by_subscription
        on integrator.webhook_delivery_attempts (tenant_id, subscription_id, attempted_at desc)
     where subscription_id is not null;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index if exists integrator.webhook_delivery_attempts_by_subscription;
    alter table integrator.webhook_delivery_attempts drop column if exists subscription_id;
  `);
}
