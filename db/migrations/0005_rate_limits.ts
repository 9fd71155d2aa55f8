// Rate-limit counters shared by every replica when RATE_LIMIT_STORE=postgres (rate-limiter-flexible's
// RateLimiterPostgres layout: key, points, expire in epoch milliseconds). Unlogged: counters are
// worth neither WAL traffic nor surviving a crash, and a lost window only resets the counts.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create unlogged table integrator.rate_limits (
      key varchar(255) primary key,
      points integer not null default 0,
      expire bigint
    );
    create index rate_limits_expire on integrator.rate_limits (expire);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop table if exists integrator.rate_limits");
}
