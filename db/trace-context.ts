// The trace context a statement hands to the jobs it queues (docs/operating.md, tracing). A statement run
// with it sets integrator.traceparent and integrator.tracestate for its own transaction, before its
// function runs (a materialized CTE, evaluated first); integrator.queue_delivery_jobs copies them into
// every job it queues (db/functions/queue_delivery_jobs.sql), and the worker's span of that job continues
// the trace. Without it (tracing off) the statement runs as it always did, and jobs carry none.
import type { Knex } from "knex";
import type pg from "pg";
import { runPrepared } from "./prepared.ts";

/** The W3C trace context (https://www.w3.org/TR/trace-context/): traceparent, and tracestate when there is one. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** Put before `select <function call> … from trace_context`; its two parameters come first (traceContextBindings). */
export const WITH_TRACE_CONTEXT =
  "with trace_context as materialized (select set_config('integrator.traceparent', ?, true), set_config('integrator.tracestate', ?, true))";

export function traceContextBindings(trace: TraceContext): [string, string] {
  return [trace.traceparent, trace.tracestate ?? ""];
}

/**
 * Runs the prepared statement `name` (`sql`) or, with a trace context, its traced form (`tracedSql`, named
 * `<name>_traced`, written with WITH_TRACE_CONTEXT), whose context bindings come before `bindings`.
 */
export function runPreparedWithTrace<Row>(
  db: Knex | Knex.Transaction,
  trace: TraceContext | undefined,
  name: string,
  statements: { sql: string; tracedSql: string },
  bindings: readonly unknown[],
): Promise<pg.QueryResult<Row & pg.QueryResultRow>> {
  return trace === undefined
    ? runPrepared<Row>(db, name, statements.sql, bindings)
    : runPrepared<Row>(db, `${name}_traced`, statements.tracedSql, [...traceContextBindings(trace), ...bindings]);
}
