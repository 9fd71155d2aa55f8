// The trace context a statement hands to the jobs it queues (docs/operating.md, tracing). A statement run
// with it sets integrator.traceparent and integrator.tracestate for its own transaction, before its
// function runs (a materialized CTE, evaluated first); integrator.queue_delivery_jobs copies them into
// every job it queues (db/functions/queue_delivery_jobs.sql), and the worker's span of that job continues
// the trace. Without it (tracing off) the statement runs as it always did, and jobs carry none.

/** The W3C trace context (traceparent, and tracestate when there is one). */
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
