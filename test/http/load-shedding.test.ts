// Load shedding: an overloaded process refuses new requests at once with 503 SERVICE_UNAVAILABLE and
// Retry-After instead of queueing them, keeps answering its probes, and serves again once the load is gone.
// Why it sheds is logged at warn with what it measured, one line per reason however many are shed.
import { Writable } from "node:stream";
import t, { type Test } from "tap";
import { poolStatistics } from "../../db/database.ts";
import { ShedLog } from "../../http/load-shedding.ts";
import { createLogger } from "../../foundation/logger.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

interface LogLine {
  level: string;
  msg: string;
  reason?: string;
  measured?: number;
  threshold?: number;
  unit?: string;
  setting?: string;
  shed_since_last_line?: number;
}

/** A stream the service logs to, kept as parsed JSON lines. */
function logCollector() {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { destination, shedLines: () => lines.filter((line) => line.msg.startsWith("requests shed")) };
}

/** A request that needs a database connection: the password grant looks the user up. */
const tokenRequest = (server: TestServer) =>
  server.request("/token", {
    method: "POST",
    body: "grant_type=password&username=nobody&password=wrong",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
  });

async function waitUntil(what: string, condition: () => boolean | Promise<boolean>, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function assertShed(t: Test, res: Response, reason: string, startedAt: number): Promise<void> {
  const elapsed = performance.now() - startedAt;
  t.equal(res.status, 503);
  const body = await res.json();
  t.equal(body.error.code, "SERVICE_UNAVAILABLE");
  t.same(body.error.details, { reason });
  t.equal(res.headers.get("retry-after"), "1");
  // Queued instead, it would wait for the held connection until the pool's 10 s acquire timeout; the
  // bound leaves room for a loaded machine's event loop without letting a queued request pass.
  t.ok(elapsed < 5000, `refused without waiting for a connection (${elapsed.toFixed(0)} ms)`);
}

t.test(
  "with the database pool saturated, new requests are refused at once and served again once it drains",
  async (t) => {
    const log = logCollector();
    const server = await startTestServer(t, {
      env: { DB_POOL_MAX: "1", LOAD_SHED_DB_PENDING_ACQUIRES: "2" },
      logDestination: log.destination,
    });
    const pending = () => poolStatistics(server.services.db)?.pendingAcquires ?? 0;
    // Hold the pool's only connection, as a slow query would.
    const client = server.services.db.client as {
      acquireConnection(): Promise<unknown>;
      releaseConnection(connection: unknown): Promise<void>;
    };
    const held = await client.acquireConnection();
    let released = false;
    t.teardown(async () => {
      if (!released) await client.releaseConnection(held);
    });

    // Three requests queue for the connection (the threshold is "more than two waiting").
    const queued = [tokenRequest(server), tokenRequest(server), tokenRequest(server)];
    await waitUntil("three requests wait for a connection", () => pending() === 3, 10);

    for (let i = 0; i < 5; i++) {
      const startedAt = performance.now();
      await assertShed(t, await tokenRequest(server), "db_pool_pending", startedAt);
    }
    t.equal(pending(), 3, "refused requests never joined the queue");
    t.match(
      log.shedLines(),
      [
        {
          level: "warn",
          msg: "requests shed (503): requests waiting for a database connection 3 requests, over the threshold of 2 requests (LOAD_SHED_DB_PENDING_ACQUIRES)",
          reason: "db_pool_pending",
          measured: 3,
          threshold: 2,
          setting: "LOAD_SHED_DB_PENDING_ACQUIRES",
          shed_since_last_line: 0,
        },
      ],
      "the reason and the measured value are logged at warn",
    );
    t.equal(log.shedLines().length, 1, "once for five shed requests");

    // The probes still answer: health with its report (the database check times out), readyz with 503 and its report.
    const [health, ready] = await Promise.all([server.request("/v1/health"), server.request("/v1/readyz")]);
    t.equal(health.status, 200);
    t.equal((await health.json()).checks.database.status, "unhealthy");
    t.equal(ready.status, 503);
    t.type((await ready.json()).status, "string", "readyz answered with its report, not an overload envelope");

    await client.releaseConnection(held);
    released = true;
    for (const res of await Promise.all(queued))
      t.equal(res.status, 400, "the queued requests were served (invalid_grant)");
    await waitUntil("requests are served again", async () => (await tokenRequest(server)).status === 400, 10);
    t.equal(pending(), 0);
  },
);

t.test(
  "with the event loop delayed past the threshold, requests are refused at once, probes answer, and service resumes",
  async (t) => {
    const log = logCollector();
    const server = await startTestServer(t, {
      env: { LOAD_SHED_EVENT_LOOP_DELAY_MS: "200" },
      logDestination: log.destination,
    });
    // On a busy machine the loop may already lag a little (the first request also compiles the validators).
    await waitUntil(
      "requests are served while the loop is idle",
      async () => (await server.request("/.well-known/jwks.json")).status === 200,
      10,
    );

    // Block this process's event loop (the server's too) for 1.5 s, as a CPU-bound request would.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
    const startedAt = performance.now();
    const [refused, health] = await Promise.all([
      server.request("/.well-known/jwks.json"),
      server.request("/v1/health"),
    ]);
    await assertShed(t, refused, "event_loop_delay", startedAt);
    t.equal(health.status, 200, "the probe is never shed");
    const [line] = log.shedLines();
    t.match(line, { level: "warn", reason: "event_loop_delay", unit: "ms", threshold: 200 }, "the shed is logged");
    t.ok((line?.measured ?? 0) > 200, `with the delay measured (${line?.measured} ms)`);

    await waitUntil(
      "requests are served again",
      async () => (await server.request("/.well-known/jwks.json")).status === 200,
      10,
    );
    t.pass("served again once the loop caught up");
  },
);

t.test(
  "the shed log writes a line per reason at most once an interval, counting the requests shed between",
  async (t) => {
    const log = logCollector();
    const shedLog = new ShedLog(createLogger({ level: "info", destination: log.destination }), 200);
    const pool = { reason: "db_pool_pending", measured: 60, threshold: 50 } as const;
    for (let i = 0; i < 1000; i++) shedLog.note(pool);
    shedLog.note({ reason: "event_loop_delay", measured: 900, threshold: 500 });
    t.same(
      log.shedLines().map((line) => [line.reason, line.shed_since_last_line]),
      [
        ["db_pool_pending", 0],
        ["event_loop_delay", 0],
      ],
      "a flood of a thousand is one line, and another reason has its own",
    );
    const started = performance.now();
    await waitFor(
      async () => performance.now() - started,
      (elapsed) => elapsed > 200,
    );
    shedLog.note({ ...pool, measured: 75 });
    t.match(
      log.shedLines()[2],
      { reason: "db_pool_pending", measured: 75, shed_since_last_line: 999 },
      "the next line counts them",
    );
  },
);
