// Named prepared statements for the statements every request or delivery runs (the intake and partner
// writes, a replay's look-up, emit_event, a delivery's read and record). knex passes a raw query's
// options to pg, and pg parses a statement that has a name once per connection: later calls send only
// Bind and Execute, and PostgreSQL keeps the statement's plan for the connection instead of parsing and
// planning the text on every call (BENCHMARKS.md, fifth session). A name stands for one text; pg refuses
// a second text under a name it has seen on a connection, so this module refuses it at once, on every
// connection alike, rather than on whichever connection happens to meet both.
import type { Knex } from "knex";

const textOf = new Map<string, string>();

/** `sql` with its bindings, run as the named prepared statement `name`. */
export function preparedRaw<T>(
  db: Knex | Knex.Transaction,
  name: string,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Knex.Raw<T> {
  const known = textOf.get(name);
  if (known === undefined) textOf.set(name, sql);
  else if (known !== sql) throw new Error(`The prepared statement ${name} was given a second text`);
  return db.raw<T>(sql, bindings as Knex.RawBinding[]).options({ name });
}
