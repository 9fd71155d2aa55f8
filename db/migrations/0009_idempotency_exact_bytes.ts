// Idempotent replays must be byte-identical to the first answer: jsonb normalises what it stores (key
// order, whitespace, number forms), so the remembered response becomes the exact JSON text that was sent.
// Rows written before this migration keep jsonb's rendering of their body.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    "alter table integrator.idempotency_keys alter column response_body type text using response_body::text",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    "alter table integrator.idempotency_keys alter column response_body type jsonb using response_body::jsonb",
  );
}
