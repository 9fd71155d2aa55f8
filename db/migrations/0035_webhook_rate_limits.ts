// Issue 29: a subscription may carry a delivery rate limit (rate_limit_per_second, 1 to 1000 attempts a
// second; null for none), which the worker keeps by pacing the subscription's attempts
// (db/functions/pace_delivery.sql). The bound is the document's; the check keeps a row written around the
// API within it too. integrator.webhook_send_pacing holds each limited subscription's pacing state, keyed
// like every tenant-owned table (tenant_id first) and gone with its subscription.
//
// delivery_to_send gains the subscription's id and rate limit (its result type changes, so the old one, if
// any, is dropped here and replaced by the new one, which its file then keeps); the down puts the old one
// back.
// pace_delivery and reset_delivery_pacing are new: their files create them, the down drops them.
import type { Knex } from "knex";

/** integrator.delivery_to_send before this migration (the down puts it back). */
const DELIVERY_TO_SEND_BEFORE = `
    create function integrator.delivery_to_send(p_tenant_id uuid, p_delivery_id uuid)
    returns table (
      id uuid, tenant_id uuid, event_id uuid, event_type text, payload jsonb, status text, attempts integer, url text,
      subscription_active boolean, subscription_disabled boolean, subscription_disabled_by text,
      secret_encrypted text, secrets_encrypted text[]
    )
    language plpgsql stable
    as $$
    begin
      return query
      select d.id, d.tenant_id, d.event_id, d.event_type, d.payload, d.status, d.attempts, s.url,
             s.is_active, s.disabled_at is not null, s.disabled_by, s.secret_encrypted,
             array_remove(array[s.secret_encrypted,
                                case when s.previous_secret_expires_at > now() then s.previous_secret_encrypted end],
                          null)
        from integrator.webhook_deliveries d
        join integrator.webhook_subscriptions s on s.tenant_id = d.tenant_id and s.id = d.subscription_id
       where d.tenant_id = p_tenant_id and d.id = p_delivery_id;
    end;
    $$;
`;

/** integrator.delivery_to_send as this migration leaves it (db/functions/delivery_to_send.sql keeps it). */
const DELIVERY_TO_SEND_AFTER = `
    create function integrator.delivery_to_send(p_tenant_id uuid, p_delivery_id uuid)
    returns table (
      id uuid, tenant_id uuid, event_id uuid, event_type text, payload jsonb, status text, attempts integer, url text,
      subscription_active boolean, subscription_disabled boolean, subscription_disabled_by text,
      secret_encrypted text, secrets_encrypted text[], subscription_id uuid, rate_limit_per_second integer
    )
    language plpgsql stable
    as $$
    begin
      return query
      select d.id, d.tenant_id, d.event_id, d.event_type, d.payload, d.status, d.attempts, s.url,
             s.is_active, s.disabled_at is not null, s.disabled_by, s.secret_encrypted,
             array_remove(array[s.secret_encrypted,
                                case when s.previous_secret_expires_at > now() then s.previous_secret_encrypted end],
                          null),
             s.id, s.rate_limit_per_second
        from integrator.webhook_deliveries d
        join integrator.webhook_subscriptions s on s.tenant_id = d.tenant_id and s.id = d.subscription_id
       where d.tenant_id = p_tenant_id and d.id = p_delivery_id;
    end;
    $$;
`;

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

    drop function if exists integrator.delivery_to_send(uuid, uuid);
    ${DELIVERY_TO_SEND_AFTER}
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function if exists integrator.reset_delivery_pacing(uuid, uuid);
    drop function if exists integrator.pace_delivery(uuid, uuid, uuid, integer, integer, integer);
    drop function if exists integrator.delivery_to_send(uuid, uuid);
    ${DELIVERY_TO_SEND_BEFORE}
    drop table if exists integrator.webhook_send_pacing;
    alter table integrator.webhook_subscriptions drop column if exists rate_limit_per_second;
  `);
}
