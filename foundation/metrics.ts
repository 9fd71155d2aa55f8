// Prometheus metrics (prom-client), served as text on METRICS_PORT by a small HTTP server of its own,
// never on the API port. Request durations, shed and rate-limited requests and webhook delivery
// outcomes are counted where they happen; the database pool and the job queue are read at scrape time.
import http from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { poolStatistics } from "../db/database.ts";
import { jobQueueStatistics } from "../db/job-queue.ts";
import { listenOn } from "./ports.ts";
import { withTimeout } from "./timeouts.ts";
import { SECURITY_HEADERS } from "./security-headers.ts";
import type { Services } from "./services.ts";

/** Metrics recorded anywhere in this process; every metrics server serves them. */
export const processRegistry = new Registry();

const requestDuration = new Histogram({
  name: "integrator_http_request_duration_seconds",
  help: "Duration of API requests, by operationId (unmatched for unknown routes), method and status.",
  labelNames: ["operation_id", "method", "status"] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [processRegistry],
});

const shedRequests = new Counter({
  name: "integrator_http_requests_shed_total",
  help: "Requests refused with 503 because the process was overloaded, by reason (event_loop_delay, db_pool_pending, body_memory).",
  labelNames: ["reason"] as const,
  registers: [processRegistry],
});

const rateLimitedRequests = new Counter({
  name: "integrator_http_requests_rate_limited_total",
  help: "Requests refused with 429 by a rate limit, by scope (principal, forbidden, unauthenticated, token, callback, unmatched, address, probe, username).",
  labelNames: ["scope"] as const,
  registers: [processRegistry],
});

const idempotentReplays = new Counter({
  name: "integrator_idempotent_replays_total",
  help: "Replays of a finished Idempotency-Key call, by where the response came from: memory (this process's replay memory) or database.",
  labelNames: ["source"] as const,
  registers: [processRegistry],
});
for (const source of ["memory", "database"] as const) idempotentReplays.inc({ source }, 0);

export type DeliveryOutcome = "delivered" | "retrying" | "failed";

const deliveryOutcomes = new Counter({
  name: "integrator_webhook_delivery_outcomes_total",
  help: "Webhook delivery attempts by outcome: delivered (2xx), retrying (failed, another attempt queued), failed (no attempts left, or the subscription was deactivated).",
  labelNames: ["outcome"] as const,
  registers: [processRegistry],
});
for (const outcome of ["delivered", "retrying", "failed"] as const) deliveryOutcomes.inc({ outcome }, 0);

for (const reason of ["event_loop_delay", "db_pool_pending", "body_memory"] as const) shedRequests.inc({ reason }, 0);

const bodyBytesHeld = new Gauge({
  name: "integrator_http_body_bytes_held",
  help: "Bytes of request bodies the API holds now (declared lengths, a streamed body at its route's limit), from reading them until their answers are sent; bounded by LOAD_SHED_BODY_MEMORY_MB.",
  registers: [processRegistry],
});

/** For the body memory bound (http/body-memory.ts): the bytes it holds now. */
export function recordBodyBytesHeld(bytes: number): void {
  bodyBytesHeld.set(bytes);
}
export const RATE_LIMIT_SCOPES = [
  "principal",
  "forbidden",
  "unauthenticated",
  "token",
  "callback",
  "callback_concurrency",
  "unmatched",
  "address",
  "probe",
  "username",
] as const;
for (const scope of RATE_LIMIT_SCOPES) rateLimitedRequests.inc({ scope }, 0);

export function observeRequest(operationId: string, method: string, status: number | "aborted", seconds: number): void {
  requestDuration.observe({ operation_id: operationId, method, status: String(status) }, seconds);
}

export function recordShedRequest(reason: "event_loop_delay" | "db_pool_pending" | "body_memory"): void {
  shedRequests.inc({ reason });
}

export function recordRateLimited(scope: (typeof RATE_LIMIT_SCOPES)[number]): void {
  rateLimitedRequests.inc({ scope });
}

export function recordIdempotentReplay(source: "memory" | "database"): void {
  idempotentReplays.inc({ source });
}

/** For the webhook delivery task: call once per attempt with its outcome. */
export function recordDeliveryOutcome(outcome: DeliveryOutcome): void {
  deliveryOutcomes.inc({ outcome });
}

const SCRAPE_QUERY_TIMEOUT_MS = 2000;

/** Gauges read at scrape time from one service's database pool and job queue. */
function scrapeRegistry(services: Services): { registry: Registry; refresh(): Promise<void> } {
  const registry = new Registry();
  const pool = new Gauge({
    name: "integrator_db_pool_connections",
    help: "Connections of the database pool, by state (used, free).",
    labelNames: ["state"] as const,
    registers: [registry],
  });
  const pending = new Gauge({
    name: "integrator_db_pool_pending_acquires",
    help: "Requests waiting for a connection from the database pool.",
    registers: [registry],
  });
  const queue = new Gauge({
    name: "integrator_job_queue_depth",
    help: "graphile-worker jobs by state: due (runnable now), scheduled (future run_at), running (locked), failed (no attempts left).",
    labelNames: ["state"] as const,
    registers: [registry],
  });
  const oldestDue = new Gauge({
    name: "integrator_job_queue_oldest_due_seconds",
    help: "Age of the oldest job that is due and not yet picked up (0 when none is waiting).",
    registers: [registry],
  });
  const replayMemoryBytes = new Gauge({
    name: "integrator_idempotency_memory_bytes",
    help: "Bytes of finished Idempotency-Key responses this process keeps in memory (at most API_IDEMPOTENCY_MEMORY_MB).",
    registers: [registry],
  });
  const replayMemoryResponses = new Gauge({
    name: "integrator_idempotency_memory_responses",
    help: "Finished Idempotency-Key responses this process keeps in memory.",
    registers: [registry],
  });
  const scrapeErrors = new Gauge({
    name: "integrator_job_queue_scrape_error",
    help: "1 when the job queue could not be read at this scrape (the queue gauges are then absent).",
    registers: [registry],
  });

  return {
    registry,
    async refresh() {
      const stats = poolStatistics(services.db);
      if (stats) {
        pool.set({ state: "used" }, stats.used);
        pool.set({ state: "free" }, stats.free);
        pending.set(stats.pendingAcquires);
      }
      replayMemoryBytes.set(services.replays.bytes);
      replayMemoryResponses.set(services.replays.size);
      queue.reset();
      oldestDue.reset();
      try {
        const row = await withTimeout(jobQueueStatistics(services.db), SCRAPE_QUERY_TIMEOUT_MS, "job queue query");
        for (const state of ["due", "scheduled", "running", "failed"] as const) queue.set({ state }, row[state]);
        oldestDue.set(Math.max(0, row.oldest_due_seconds ?? 0));
        scrapeErrors.set(0);
      } catch (error) {
        scrapeErrors.set(1);
        services.logger.warn({ err: error }, "metrics: the job queue could not be read");
      }
    },
  };
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

let defaultMetricsStarted = false;

/**
 * Serves GET /metrics (Prometheus text format) on its own port, and GET /health (the operator's health
 * report with every detail the public probes leave out) when `healthReport` is given; port 0 picks a free one.
 * Every answer carries the service's security headers, and a request must arrive within the API's own
 * limits (HTTP_HEADERS_TIMEOUT_MS for its headers, HTTP_REQUEST_TIMEOUT_MS in all), else Node answers 408
 * and closes the connection: a client that never finishes its request cannot hold a connection open.
 */
export async function startMetricsServer(
  services: Services,
  options: { port: number; host?: string; healthReport?: () => Promise<unknown> },
): Promise<MetricsServer> {
  if (!defaultMetricsStarted) {
    collectDefaultMetrics({ register: processRegistry });
    defaultMetricsStarted = true;
  }
  const scrape = scrapeRegistry(services);
  const limits = services.config.http;
  const server = http.createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      // Node checks those timeouts on this interval (30 s by default, coarser than the timeouts themselves).
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    },
    (req, res) => {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
      const path = (req.url ?? "/").split("?")[0];
      const healthReport = options.healthReport;
      if (path !== "/metrics" && !(path === "/health" && healthReport)) {
        res.writeHead(404, { "Content-Type": "text/plain" }).end("Not found: metrics are at /metrics\n");
        return;
      }
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.writeHead(405, { Allow: "GET, HEAD", "Content-Type": "text/plain" }).end("Method not allowed\n");
        return;
      }
      if (path === "/health" && healthReport) {
        healthReport().then(
          (report) => {
            res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-store" });
            res.end(req.method === "HEAD" ? undefined : JSON.stringify(report));
          },
          (error: unknown) => {
            services.logger.error({ err: error }, "metrics: health report failed");
            res.writeHead(500, { "Content-Type": "text/plain" }).end("Health report failed\n");
          },
        );
        return;
      }
      scrape
        .refresh()
        .then(() => Registry.merge([processRegistry, scrape.registry]).metrics())
        .then(
          (text) => {
            res.writeHead(200, { "Content-Type": processRegistry.contentType, "Cache-Control": "no-store" });
            res.end(req.method === "HEAD" ? undefined : text);
          },
          (error: unknown) => {
            services.logger.error({ err: error }, "metrics: scrape failed");
            res.writeHead(500, { "Content-Type": "text/plain" }).end("Scrape failed\n");
          },
        );
    },
  );
  server.keepAliveTimeout = 65_000;
  await listenOn(server, options.port, options.host, "METRICS_PORT");
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : options.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
