// Issue 29: a subscription may carry a delivery rate limit (rate_limit_per_second, 1 to 1000 attempts a
// second; null for none), which the worker keeps by pacing the subscription's attempts
// (db/functions/pace_delivery.sql). The bound is the document's; the check keeps a row written around the
// API within it too. integrator.webhook_send_pacing holds each limited subscription's pacing state, keyed
// like every tenant-owned table (tenant_id first) and gone with its subscription.
//
// pace_delivery and reset_delivery_pacing are new: their files create them, the down drops them.
// delivery_to_attempt (db/functions/delivery_to_attempt.sql, new in this release) returns the rate limit.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.webhook_subscriptions
      add column rate_limit_per_second integer
      constraint webhook_subscriptions_rate_limit_range check (rate_limit_per_second between 1 and 1000);

    create table integrator.webhook_send_pacing (
      tenant_id uuid not null,
      subscription_id uuid not null,
      -- The next slot handed to a delivery that must wait; null before the first.
      next_free_at timestamptz,
      -- When the last attempt was let go; null before the first.
      last_sent_at timestamptz,
      -- Bumped when the subscription's limit changes: the slots handed out before no longer hold.
      generation integer not null default 0,
      primary key (tenant_id, subscription_id),
      foreign key (tenant_id, subscription_id) references integrator.webhook_subscriptions (tenant_id, id)
        on delete cascade
    );

  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function if exists integrator.reset_delivery_pacing(uuid, uuid);
    drop function if exists integrator.pace_delivery(uuid, uuid, uuid, integer, integer, integer);
    drop table if exists integrator.webhook_send_pacing;
    alter table integrator.webhook_subscriptions drop column if exists rate_limit_per_second;
  `);
}
