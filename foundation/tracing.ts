// The spans the service makes itself and the trace context it carries into jobs (docs/operating.md,
// tracing). Tracing is off unless the OTEL_ settings turn it on; then foundation/tracing-sdk.ts starts the
// OpenTelemetry SDK and hands this module its tracer. Until then (and for good when tracing is off) every
// helper here only runs the work it is given: this module loads nothing of OpenTelemetry (its imports are
// types, erased), so tracing costs nothing when it is off.
//
// Attributes name ids and kinds only (tenant, operation, submission, event, subscription, delivery),
// never a secret, a token, a signature, a URL's path or query, or a payload.
import type { Context, Span, Tracer, TextMapPropagator } from "@opentelemetry/api";
import type * as OpenTelemetry from "@opentelemetry/api";
import type { TraceContext } from "../db/trace-context.ts";

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export type SpanKindName = "internal" | "server" | "client" | "producer" | "consumer";

/** What foundation/tracing-sdk.ts hands over once the SDK runs. */
export interface ActiveTracing {
  api: typeof OpenTelemetry;
  tracer: Tracer;
  propagator: TextMapPropagator;
  /** The server span of the HTTP request `context` belongs to, with its route (@opentelemetry/core's RPC metadata). */
  requestOf(context: Context): { span: Span; route?: string } | undefined;
}

let tracing: ActiveTracing | undefined;

/** Called once by foundation/tracing-sdk.ts when tracing is on. */
export function useTracing(active: ActiveTracing): void {
  tracing = active;
}

export function tracingIsOn(): boolean {
  return tracing !== undefined;
}

/** A span as the work inside it sees it: attributes added once they are known. */
export interface SpanHandle {
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed (the error's class and message, never a payload). */
  fail(errorType: string, message?: string): void;
}

function defined(attributes: SpanAttributes | undefined): OpenTelemetry.Attributes {
  const kept: OpenTelemetry.Attributes = {};
  for (const [name, value] of Object.entries(attributes ?? {})) if (value !== undefined) kept[name] = value;
  return kept;
}

/**
 * Runs `work` inside a new span named `name` (a child of the active span, or of `parent`, a carried trace
 * context); the span ends when the work settles, failed when it throws. With tracing off: only `work()`.
 */
export async function inSpan<T>(
  name: string,
  options: {
    kind?: SpanKindName;
    /** Or a function giving them, called only when tracing is on. */
    attributes?: SpanAttributes | (() => SpanAttributes);
    parent?: TraceContext;
  },
  work: (span: SpanHandle | undefined) => Promise<T>,
): Promise<T> {
  if (tracing === undefined) return work(undefined);
  const { api, tracer, propagator } = tracing;
  const kinds = {
    internal: api.SpanKind.INTERNAL,
    server: api.SpanKind.SERVER,
    client: api.SpanKind.CLIENT,
    producer: api.SpanKind.PRODUCER,
    consumer: api.SpanKind.CONSUMER,
  };
  const parentContext =
    options.parent === undefined
      ? api.context.active()
      : propagator.extract(api.ROOT_CONTEXT, options.parent, api.defaultTextMapGetter);
  const span = tracer.startSpan(
    name,
    {
      kind: kinds[options.kind ?? "internal"],
      attributes: defined(typeof options.attributes === "function" ? options.attributes() : options.attributes),
    },
    parentContext,
  );
  const handle: SpanHandle = {
    setAttributes: (attributes) => span.setAttributes(defined(attributes)),
    fail: (errorType, message) => {
      span.setAttribute("error.type", errorType);
      span.setStatus({ code: api.SpanStatusCode.ERROR, ...(message === undefined ? {} : { message }) });
    },
  };
  try {
    return await api.context.with(api.trace.setSpan(parentContext, span), () => work(handle));
  } catch (error) {
    // The error's class only: a message could quote input.
    handle.fail(error instanceof Error ? error.name : "Error");
    throw error;
  } finally {
    span.end();
  }
}

/** The active trace context, to carry into the jobs a statement queues; undefined when tracing is off. */
export function currentTraceCarrier(): TraceContext | undefined {
  if (tracing === undefined) return undefined;
  const { api, propagator } = tracing;
  const carrier: Record<string, string> = {};
  propagator.inject(api.context.active(), carrier, api.defaultTextMapSetter);
  if (carrier.traceparent === undefined) return undefined;
  return carrier.tracestate
    ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
    : { traceparent: carrier.traceparent };
}

/** The trace context a job's payload carries (`traceparent`, `tracestate`), when it carries one. */
export function carriedTraceContext(payload: unknown): TraceContext | undefined {
  const { traceparent, tracestate } = (payload ?? {}) as { traceparent?: unknown; tracestate?: unknown };
  if (typeof traceparent !== "string") return undefined;
  return typeof tracestate === "string" && tracestate !== "" ? { traceparent, tracestate } : { traceparent };
}

/**
 * The HTTP request's server span, to describe once its answer is known: call within the request (the
 * returned function may run later, e.g. when the response finishes). `route` becomes http.route and the
 * span's name (`POST /v1/intake/submit`). Undefined when tracing is off or the request is not traced.
 */
export function requestSpanDescriber(): ((route: string | undefined, attributes: SpanAttributes) => void) | undefined {
  if (tracing === undefined) return undefined;
  const request = tracing.requestOf(tracing.api.context.active());
  if (request === undefined) return undefined;
  return (route, attributes) => {
    // The http instrumentation names the span `METHOD route` and sets http.route from this when it ends.
    if (route !== undefined) request.route = route;
    request.span.setAttributes(defined(attributes));
  };
}
