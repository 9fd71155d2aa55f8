// Load shedding: when the process is overloaded, a new request is refused at once with 503
// SERVICE_UNAVAILABLE and Retry-After instead of joining a queue that only grows. Two signals, each
// with a threshold from the settings (0 turns it off): the event-loop delay (every request already
// waits that long before any of its code runs) and the number of callers waiting for a database
// connection (each new request would wait behind all of them). Probes are never shed: an overloaded
// instance must still be able to say how it is. A third reason, body_memory, is checked where bodies are
// read (http/body-memory.ts). Why requests are shed is logged at warn with what was measured (ShedLog),
// a line per reason at most every SHED_LOG_INTERVAL_MS, so that a flood of refusals is a few lines.
import { monitorEventLoopDelay, performance, type ELDHistogram } from "node:perf_hooks";
import type { NextFunction, Request, Response } from "express";
import { ApiError } from "./errors.ts";
import type { Logger } from "../foundation/logger.ts";
import { recordShedRequest } from "../foundation/metrics.ts";

const SAMPLE_INTERVAL_MS = 500;
const HISTOGRAM_RESOLUTION_MS = 10;
const RETRY_AFTER_SECONDS = 1;

export type ShedReason = "event_loop_delay" | "db_pool_pending" | "body_memory";

/** Why a request is shed: its reason, the value measured and the threshold it passed, in the setting's unit. */
export interface Overload {
  reason: ShedReason;
  measured: number;
  threshold: number;
}

/** The setting of each reason's threshold, and the unit of its values. */
const SHED_MEASURES: Record<ShedReason, { setting: string; unit: string; what: string }> = {
  event_loop_delay: { setting: "LOAD_SHED_EVENT_LOOP_DELAY_MS", unit: "ms", what: "event-loop delay" },
  db_pool_pending: {
    setting: "LOAD_SHED_DB_PENDING_ACQUIRES",
    unit: "requests",
    what: "requests waiting for a database connection",
  },
  body_memory: { setting: "LOAD_SHED_BODY_MEMORY_MB", unit: "bytes", what: "request body bytes held" },
};

/** The shortest time between two log lines about one reason of shedding. */
export const SHED_LOG_INTERVAL_MS = 10_000;

/**
 * The warn lines about shed requests, one per process (createApp makes it): the first request shed for a
 * reason is logged at once with what was measured; further ones within SHED_LOG_INTERVAL_MS are counted,
 * and the next line says how many there were.
 */
export class ShedLog {
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private readonly lastLine = new Map<ShedReason, { at: number; shedSince: number }>();

  constructor(logger: Logger, intervalMs = SHED_LOG_INTERVAL_MS) {
    this.logger = logger;
    this.intervalMs = intervalMs;
  }

  note(overload: Overload): void {
    const now = performance.now();
    const last = this.lastLine.get(overload.reason);
    if (last && now - last.at < this.intervalMs) {
      last.shedSince++;
      return;
    }
    const { setting, unit, what } = SHED_MEASURES[overload.reason];
    this.logger.warn(
      {
        reason: overload.reason,
        measured: overload.measured,
        threshold: overload.threshold,
        unit,
        setting,
        shed_since_last_line: last?.shedSince ?? 0,
      },
      `requests shed (503): ${what} ${overload.measured} ${unit}, over the threshold of ${overload.threshold} ${unit} (${setting})`,
    );
    this.lastLine.set(overload.reason, { at: now, shedSince: 0 });
  }
}

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

/** Why the process is overloaded now, with what was measured; undefined when it is not. */
export function overload(options: LoadSheddingOptions): Overload | undefined {
  if (options.eventLoopDelayMs > 0) {
    const delay = eventLoopDelayMs();
    if (delay > options.eventLoopDelayMs)
      return { reason: "event_loop_delay", measured: Math.round(delay), threshold: options.eventLoopDelayMs };
  }
  if (options.dbPendingAcquires > 0) {
    const pending = options.pendingAcquires();
    if (pending > options.dbPendingAcquires)
      return { reason: "db_pool_pending", measured: pending, threshold: options.dbPendingAcquires };
  }
  return undefined;
}

/** Refuses non-probe requests while the process is overloaded. */
export function loadShedding(
  options: LoadSheddingOptions,
  isProbe: (res: Response) => boolean,
  shedLog: ShedLog,
): (req: Request, res: Response, next: NextFunction) => void {
  // Start measuring now (after the app's synchronous set-up), not at the first request.
  if (options.eventLoopDelayMs > 0) eventLoopDelayMs();
  return (_req, res, next) => {
    if (isProbe(res)) return next();
    const found = overload(options);
    if (!found) return next();
    next(shed(found, shedLog));
  };
}

/** The 503 a shed request gets, counted by its reason and noted in the shed log. */
export function shed(found: Overload, shedLog: ShedLog): ApiError {
  const { reason } = found;
  recordShedRequest(reason);
  shedLog.note(found);
  return new ApiError(
    "SERVICE_UNAVAILABLE",
    "The service is overloaded; retry after the number of seconds in Retry-After",
    {
      headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
      details: { reason },
    },
  );
}
