// A subscription carries an optional description (what the endpoint is for), set at creation and changed
// with updateWebhookSubscription. The bound is the document's (1 to 500 characters); the check keeps a row
// written around the API within it too.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.webhook_subscriptions
      add column description text
      constraint webhook_subscriptions_description_length check (char_length(description) between 1 and 500)
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("alter table integrator.webhook_subscriptions drop column description");
}
