// Load generator for the benchmarks, run as a child process so it does not share the server's event
// loop. Reads one scenario as JSON from argv[2], prints autocannon's figures as JSON on stdout.
import { randomUUID } from "node:crypto";
import autocannon, { type Request } from "autocannon";

/** One kind of request a benchmark sends (scripts/bench-intake.ts builds them). */
export interface Scenario {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  /** Send a fresh Idempotency-Key with every request. */
  uniqueIdempotencyKey?: boolean;
}

const scenario = JSON.parse(process.argv[2] ?? "{}") as Scenario & { connections: number; duration: number };

const result = await autocannon({
  url: scenario.url,
  connections: scenario.connections,
  duration: scenario.duration,
  requests: [
    {
      method: scenario.method,
      headers: scenario.headers,
      ...(scenario.body === undefined ? {} : { body: scenario.body }),
      ...(scenario.uniqueIdempotencyKey
        ? {
            setupRequest: (request: Request): Request => ({
              ...request,
              headers: { ...request.headers, "Idempotency-Key": randomUUID() },
            }),
          }
        : {}),
    },
  ],
});

process.stdout.write(
  JSON.stringify({
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  }),
);
