// Load generator for the benchmarks, run as a child process so it does not share the server's event
// loop. Reads one scenario as JSON from argv[2], prints autocannon's figures as JSON on stdout.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import autocannon, { type Request } from "autocannon";
import type { EventEmitter } from "node:events";

/** One kind of request a benchmark sends (scripts/bench/intake.ts builds them). */
export interface Scenario {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  /** Send a fresh Idempotency-Key with every request. */
  uniqueIdempotencyKey?: boolean;
  /** The body, read from this file (for bodies too large for a command line). */
  bodyFile?: string;
}

/** A scenario with its load: for `duration` seconds, or `amount` requests in all. */
export type Load = Scenario & { connections: number } & ({ duration: number } | { amount: number });

const scenario = JSON.parse(process.argv[2] ?? "{}") as Load;

const started = performance.now();
let lastAnswer = started;
const load = autocannon({
  url: scenario.url,
  connections: scenario.connections,
  ...("amount" in scenario ? { amount: scenario.amount } : { duration: scenario.duration }),
  requests: [
    {
      method: scenario.method,
      headers: scenario.headers,
      ...(scenario.body === undefined ? {} : { body: scenario.body }),
      ...(scenario.bodyFile === undefined ? {} : { body: fs.readFileSync(scenario.bodyFile, "utf8") }),
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
// autocannon reports only on its one-second ticker, so its own duration of a fixed amount is rounded up
// to the next tick: the load's time is taken here, to its last answer.
(load as unknown as EventEmitter).on("response", () => {
  lastAnswer = performance.now();
});
const result = await load;
const seconds = (lastAnswer - started) / 1000;

process.stdout.write(
  JSON.stringify({
    // Answers over the time to the last one: autocannon's requests.average is the mean of whole-second
    // buckets, which a load of a few seconds (a fixed amount) quantises and its last part-second skews.
    requestsPerSecond: seconds > 0 ? result.requests.total / seconds : Number.NaN,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(
      Object.entries(result.statusCodeStats ?? {}).map(([code, { count }]) => [code, count]),
    ),
  }),
);
