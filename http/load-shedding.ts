// Load shedding: when the process is overloaded, a new request is refused at once with 503
// SERVICE_UNAVAILABLE and Retry-After instead of joining a queue that only grows. Two signals, each
// with a threshold from the settings (0 turns it off): the event-loop delay (every request already
// waits that long before any of its code runs) and the number of callers waiting for a database
// connection (each new request would wait behind all of them). Probes are never shed: an overloaded
// instance must still be able to say how it is. A third reason, body_memory, is checked where bodies are
// read (http/body-memory.ts).
import { monitorEventLoopDelay, performance, type ELDHistogram } from "node:perf_hooks";
import type { NextFunction, Request, Response } from "express";
import { ApiError } from "./errors.ts";
import { recordShedRequest } from "../server/metrics.ts";

const SAMPLE_INTERVAL_MS = 500;
const HISTOGRAM_RESOLUTION_MS = 10;
const RETRY_AFTER_SECONDS = 1;

export type ShedReason = "event_loop_delay" | "db_pool_pending" | "body_memory";

/**
 * The event loop's recent delay in milliseconds. Every SAMPLE_INTERVAL_MS the mean delay measured by
 * perf_hooks over the interval is taken; a sampler that itself fires late (a loop blocked for longer
 * than an interval records nothing in the histogram) counts with its own lateness, so a long block is
 * seen at once, also by a request that arrives before the overdue sample has run.
 */
class EventLoopMonitor {
  private readonly histogram: ELDHistogram;
  private readonly timer: NodeJS.Timeout;
  private lastSample = performance.now();
  private sampledDelayMs = 0;

  constructor() {
    this.histogram = monitorEventLoopDelay({ resolution: HISTOGRAM_RESOLUTION_MS });
    this.histogram.enable();
    this.timer = setInterval(() => this.sample(), SAMPLE_INTERVAL_MS);
    this.timer.unref();
  }

  private sample(): void {
    const now = performance.now();
    const lateness = Math.max(0, now - this.lastSample - SAMPLE_INTERVAL_MS);
    const mean = this.histogram.count > 0 ? Math.max(0, this.histogram.mean / 1e6 - HISTOGRAM_RESOLUTION_MS) : 0;
    this.histogram.reset();
    this.lastSample = now;
    this.sampledDelayMs = Math.max(lateness, mean);
  }

  delayMs(): number {
    const overdue = performance.now() - this.lastSample - SAMPLE_INTERVAL_MS;
    return Math.max(this.sampledDelayMs, overdue);
  }

  stop(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}

// One event loop per process, so one monitor per process, started by the first app that needs it.
let monitor: EventLoopMonitor | undefined;

export function eventLoopDelayMs(): number {
  monitor ??= new EventLoopMonitor();
  return monitor.delayMs();
}

export function stopEventLoopMonitor(): void {
  monitor?.stop();
  monitor = undefined;
}

export interface LoadSheddingOptions {
  /** Event-loop delay threshold in milliseconds; 0 = off. */
  eventLoopDelayMs: number;
  /** Waiting-for-a-connection threshold; 0 = off. */
  dbPendingAcquires: number;
  /** Callers currently waiting for a database connection. */
  pendingAcquires(): number;
}

export function overloadReason(options: LoadSheddingOptions): ShedReason | undefined {
  if (options.eventLoopDelayMs > 0 && eventLoopDelayMs() > options.eventLoopDelayMs) return "event_loop_delay";
  if (options.dbPendingAcquires > 0 && options.pendingAcquires() > options.dbPendingAcquires) return "db_pool_pending";
  return undefined;
}

/** Refuses non-probe requests while the process is overloaded. */
export function loadShedding(
  options: LoadSheddingOptions,
  isProbe: (res: Response) => boolean,
): (req: Request, res: Response, next: NextFunction) => void {
  // Start measuring now (after the app's synchronous set-up), not at the first request.
  if (options.eventLoopDelayMs > 0) eventLoopDelayMs();
  return (_req, res, next) => {
    if (isProbe(res)) return next();
    const reason = overloadReason(options);
    if (!reason) return next();
    next(shed(reason));
  };
}

/** The 503 a shed request gets, counted by its reason. */
export function shed(reason: ShedReason): ApiError {
  recordShedRequest(reason);
  return new ApiError(
    "SERVICE_UNAVAILABLE",
    "The service is overloaded; retry after the number of seconds in Retry-After",
    {
      headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
      details: { reason },
    },
  );
}
