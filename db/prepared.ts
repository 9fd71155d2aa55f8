// Named prepared statements for the statements every request or delivery runs (the intake and partner
// writes, a replay's look-up, emit_event, a delivery's read and record). pg parses a statement that has a
// name once per connection: later calls send only Bind and Execute, and PostgreSQL keeps the statement's
// plan for the connection instead of parsing and planning the text on every call (docs/performance.md,
// changes the figures justify). A name stands for one text; pg refuses a second text under a name it has seen on a
// connection, so this module refuses it at once, on every connection alike, rather than on whichever
// connection happens to meet both.
//
// The statement runs on a connection of knex's pool (or the transaction's own connection, inside one),
// handed straight to pg: knex's query builder has nothing to add to a fixed text, and its per-call
// work (rewriting the placeholders, copying the bindings, wrapping the promise) cost more Node CPU
// than the rest of a replay's database call (docs/performance.md). Its `?` placeholders
// become `$1…$n` once per name.
import type { Knex } from "knex";
import type pg from "pg";

/** What this module uses of knex's client: a pooled pg connection out and back (a transaction's own inside one). */
interface ConnectionSource {
  acquireConnection(): Promise<pg.ClientBase>;
  releaseConnection(connection: pg.ClientBase): Promise<void>;
}

interface Statement {
  /** The text as written, with `?` placeholders. */
  sql: string;
  /** The text sent, with `$1…$n`. */
  text: string;
  parameters: number;
}

const statements = new Map<string, Statement>();

function statementOf(name: string, sql: string): Statement {
  const known = statements.get(name);
  if (known !== undefined) {
    if (known.sql !== sql) throw new Error(`The prepared statement ${name} was given a second text`);
    return known;
  }
  let parameters = 0;
  const text = sql.replace(/\?/g, () => `$${++parameters}`);
  const statement = { sql, text, parameters };
  statements.set(name, statement);
  return statement;
}

/**
 * `sql` (its parameters written `?`) with its bindings, run as the named prepared statement `name` on a
 * connection of `db`. A second text for a name, or a binding count that does not match, is refused
 * before anything is sent.
 */
export function runPrepared<Row>(
  db: Knex | Knex.Transaction,
  name: string,
  sql: string,
  bindings: readonly unknown[],
): Promise<pg.QueryResult<Row & pg.QueryResultRow>> {
  const statement = statementOf(name, sql);
  if (bindings.length !== statement.parameters || bindings.includes(undefined))
    throw new Error(`The prepared statement ${name} takes ${statement.parameters} defined bindings`);
  return run<Row & pg.QueryResultRow>(
    db.client as ConnectionSource,
    db.isTransaction === true,
    name,
    statement.text,
    bindings,
  );
}

/**
 * Per connection, the statements PostgreSQL will no longer run under their name, and the name used
 * instead. A migration that changes what a statement returns (a function's result columns, say) while
 * this process runs leaves the statement prepared on each open connection failing with "cached plan must
 * not change result type" for as long as the connection lives; the statement is then prepared again
 * under a fresh name on that connection, and the call retried once (outside a transaction, which the
 * failure has already aborted).
 */
const renamed = new WeakMap<pg.ClientBase, Map<string, string>>();

function planResultChanged(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === "0A000" && typeof message === "string" && message.includes("cached plan must not change result type");
}

/** Sends one statement. Invariant: its callback is in the query's config (one pg added later kept the values alive). */
function send<Row extends pg.QueryResultRow>(
  connection: pg.ClientBase,
  name: string,
  text: string,
  values: readonly unknown[],
): Promise<pg.QueryResult<Row>> {
  return new Promise((resolve, reject) => {
    const callback = (error: Error | null, result: pg.QueryResult<Row>) => (error ? reject(error) : resolve(result));
    void connection.query<Row>({ name, text, values: values as unknown[], callback } as pg.QueryConfig);
  });
}

async function run<Row extends pg.QueryResultRow>(
  source: ConnectionSource,
  inTransaction: boolean,
  name: string,
  text: string,
  values: readonly unknown[],
): Promise<pg.QueryResult<Row>> {
  const connection = await source.acquireConnection();
  try {
    const names = renamed.get(connection);
    const current = names?.get(name) ?? name;
    try {
      return await send<Row>(connection, current, text, values);
    } catch (error) {
      if (!planResultChanged(error)) throw error;
      const fresh = `${name}~${(names?.size ?? 0) + 1}`;
      if (names) names.set(name, fresh);
      else renamed.set(connection, new Map([[name, fresh]]));
      if (inTransaction) throw error;
      return await send<Row>(connection, fresh, text, values);
    }
  } finally {
    await source.releaseConnection(connection);
  }
}
