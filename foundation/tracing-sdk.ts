// The OpenTelemetry SDK, started only when the OTEL_ settings turn tracing on (foundation/config.ts): app/main.ts
// imports this module then, before any module that loads pg, express or http, so that their
// instrumentations see them. With tracing off nothing here is ever loaded.
//
// ES modules are hooked by import-in-the-middle's loader hooks, registered here for the instrumented
// packages only (our own .ts modules are never wrapped); CommonJS requires (knex and graphile-worker load
// pg that way) by require-in-the-middle, which the instrumentations set up themselves. Spans go to an OTLP/HTTP
// collector in batches; the exporter reads OTEL_EXPORTER_OTLP_ENDPOINT, _TRACES_ENDPOINT, _HEADERS,
// _TIMEOUT, _COMPRESSION and _CERTIFICATE itself.
import { register as registerHooks } from "node:module";
import * as api from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { getRPCMetadata, W3CTraceContextPropagator } from "@opentelemetry/core";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { ExpressInstrumentation } from "@opentelemetry/instrumentation-express";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { defaultResource, envDetector, detectResources, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { createAddHookMessageChannel } from "import-in-the-middle";
import { register as registerSyncHooks, supportsSyncHooks } from "import-in-the-middle/register-hooks.mjs";
import type { TracingSettings } from "./config.ts";
import { safeQuery, type Logger } from "./logger.ts";
import { useTracing } from "./tracing.ts";

/** The packages whose ES-module imports are hooked: what the three instrumentations patch. */
const INSTRUMENTED_MODULES = ["pg", "pg-pool", "express", "http", "https"];

export interface RunningTracing {
  /** The SDK's own warnings and errors (a collector that cannot be reached, spans dropped) become log lines. */
  logTo(logger: Logger): void;
  /** Sends what is left and stops; bounded by `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>;
}

function samplerOf(settings: TracingSettings): Sampler {
  const ratio = new TraceIdRatioBasedSampler(settings.samplerRatio);
  switch (settings.sampler) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio;
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio });
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

async function exporterOf(settings: TracingSettings): Promise<SpanExporter> {
  // Only the exporter of the chosen encoding is loaded.
  if (settings.protocol === "http/json") {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    return new OTLPTraceExporter();
  }
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");
  return new OTLPTraceExporter();
}

/** Registers the loader hooks, starts the SDK and the instrumentations, and hands foundation/tracing.ts its tracer. */
export async function startTracing(
  settings: TracingSettings,
  service: { name: string; version: string },
): Promise<RunningTracing> {
  // In-thread hooks where Node has them (Node 24.11.1 and later); else the loader thread, told of the hooked
  // modules before the application's modules load.
  let acknowledged: Promise<void> | undefined;
  if (supportsSyncHooks()) {
    registerSyncHooks({ include: INSTRUMENTED_MODULES });
  } else {
    const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
    registerHooks("import-in-the-middle/hook.mjs", import.meta.url, registerOptions);
    acknowledged = waitForAllMessagesAcknowledged();
  }

  const contextManager = new AsyncLocalStorageContextManager();
  api.context.setGlobalContextManager(contextManager.enable());
  const propagator = new W3CTraceContextPropagator();
  api.propagation.setGlobalPropagator(propagator);

  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: service.name, [ATTR_SERVICE_VERSION]: service.version }))
    // OTEL_RESOURCE_ATTRIBUTES, and OTEL_SERVICE_NAME over everything.
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler: samplerOf(settings),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: await exporterOf(settings),
        scheduledDelayMillis: settings.scheduleDelayMs,
        maxQueueSize: settings.maxQueueSize,
        maxExportBatchSize: Math.min(512, settings.maxQueueSize),
      }),
    ],
  });
  api.trace.setGlobalTracerProvider(provider);

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      // Incoming requests only: a webhook attempt is a span of our own (worker/tasks/deliver_webhook.ts),
      // which records no URL path or query (a receiver's URL can hold its secret) and adds no traceparent
      // header to what receivers get. Headers are never recorded (no headersToSpanAttributes). The query
      // is recorded as the request log shows it (safeQuery: access_token, signature, client_secret,
      // password ... masked, whatever their case or escaping) in place of the instrumentation's own
      // url.query, whose built-in list names none of them: the hook's attributes take precedence.
      new HttpInstrumentation({
        disableOutgoingRequestInstrumentation: true,
        startIncomingSpanHook: (request) => {
          const mark = request.url?.indexOf("?") ?? -1;
          return mark < 0 ? {} : { "url.query": safeQuery(request.url?.slice(mark + 1) ?? "") };
        },
      }),
      new ExpressInstrumentation(),
      // SQL text only, never the bound values (enhancedDatabaseReporting stays off); only statements run
      // inside a traced request or job, not graphile-worker's polling and bookkeeping.
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
    ],
  });
  await acknowledged;

  useTracing({
    api,
    tracer: provider.getTracer("integrator-api", service.version),
    propagator,
    requestOf: (context) => getRPCMetadata(context),
  });
  return {
    logTo: (logger) => {
      const log = logger.child({ component: "tracing" });
      const ignore = () => undefined;
      api.diag.setLogger(
        {
          error: (detail) => log.warn({ detail }, "the OpenTelemetry SDK reported a problem; spans may be lost"),
          warn: (detail) => log.warn({ detail }, "the OpenTelemetry SDK reported a problem; spans may be lost"),
          info: ignore,
          debug: ignore,
          verbose: ignore,
        },
        api.DiagLogLevel.WARN,
      );
    },
    shutdown: async (timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => undefined),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
