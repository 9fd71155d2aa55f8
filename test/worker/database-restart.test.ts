// PostgreSQL restarted under delivery load, several times: the worker process (npm start's, API and worker
// in one) rides each outage out by itself and never exits; every delivery reaches its receiver exactly once
// (an attempt sent while the database is away is recorded when it returns, so it is not sent again);
// readiness answers 503 while the database is away and while the worker's job runner is down, and 200
// once both are back. Real processes: a PostgreSQL of the test's own that it stops and starts, the
// service as a child process, and an HTTPS receiver on loopback.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as pause } from "node:timers/promises";
import t from "tap";
import { createDatabase, startEmbeddedPostgres, type EmbeddedServer } from "../../db/database.ts";
import { emitEvent } from "../../db/events.ts";
import { migrateAll } from "../../app/services.ts";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { startReceiver } from "../helpers/https-receiver.ts";
import { startMainProcess } from "../helpers/main-process.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";
import { testCa, webhookEnv } from "../helpers/webhooks.ts";
import { webhookRequestErrors } from "../helpers/webhook-schemas.ts";

const RESTARTS = 4;
const ca = testCa(t);

/** One GET /v1/readyz: when it was asked, when it answered, and the status. */
interface ReadinessSample {
  start: number;
  end: number;
  status: number;
}

t.test(
  "PostgreSQL restarted under delivery load: the worker rides it out, every delivery arrives once, readiness follows",
  async (t) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-pg-restart-"));
    const port = await freePort();
    let postgres: EmbeddedServer | undefined = await startEmbeddedPostgres({ dataDir, port });
    t.teardown(async () => {
      await postgres?.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    const url = postgres.url;
    const migrator = createDatabase(url, 2);
    await migrateAll(migrator, url);
    await migrator.destroy();

    const server = await startTestServer(t, { databaseUrl: url, env: webhookEnv(ca) });
    const receiver = await startReceiver(ca, () => ({ status: 204, delayMs: 150 }), {
      onRequest: (request) => {
        const problems = webhookRequestErrors(request);
        if (problems.length > 0) t.fail("a delivery does not match the document's webhooks section", { problems });
      },
    });
    t.teardown(() => receiver.close());
    const tenant = await createTestTenant(server.services);
    // Two subscriptions: each event's deliveries go in one deliver_webhooks job.
    for (const pathname of ["/a", "/b"]) {
      const res = await server.request("/v1/webhooks/subscriptions", {
        method: "POST",
        token: tenant.token,
        json: { url: receiver.url(pathname), events: ["*"] },
      });
      t.equal(res.status, 201);
    }

    const service = await startMainProcess(
      t,
      { ...server.env, PORT: "0", LOG_LEVEL: "info", WORKER_CONCURRENCY: "5", SHUTDOWN_TIMEOUT_MS: "3000" },
      { args: [] },
    );
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    void service.exited.then((exit) => (exited = exit));

    // Readiness, asked over and over for the whole test.
    const samples: ReadinessSample[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const start = Date.now();
        const status = await fetch(`http://127.0.0.1:${service.port}/v1/readyz`).then(
          (res) => res.status,
          () => 0,
        );
        samples.push({ start, end: Date.now(), status });
        await pause(25);
      }
    })();
    // Waits end as soon as the service has exited: that is the failure this test is about.
    const readiness = async () => {
      if (exited) throw new Error(`the service exited (${JSON.stringify(exited)}):\n${service.stdout().slice(-4000)}`);
      return samples.at(-1)?.status;
    };
    t.equal(
      await waitFor(readiness, (status) => status === 200, { seconds: 30 }),
      200,
      "ready before the first restart",
    );

    // A stream of events, one after the other; an emit while the database is away fails and is tried again.
    let emitting = true;
    let emitted = 0;
    const emitter = (async () => {
      while (emitting) {
        try {
          await server.services.db.transaction((trx) =>
            emitEvent(trx, tenant.tenantId, "scorecard.created", { scorecard_id: crypto.randomUUID() }),
          );
          emitted++;
        } catch {
          // The database is away.
        }
        await pause(40);
      }
    })();

    const outages: { from: number; to: number }[] = [];
    for (let round = 1; round <= RESTARTS; round++) {
      // Deliveries flow, and some are in flight, when PostgreSQL stops.
      const before = receiver.received.length;
      await waitFor(
        async () => ((await readiness()) === undefined ? 0 : receiver.received.length),
        (count) => count >= before + 30,
        { seconds: 60 },
      );
      await postgres.stop();
      postgres = undefined;
      const from = Date.now();
      // Readiness has been asked and has answered while the database is away (checked below), and the
      // attempts in flight have been answered: their records wait for the database.
      await waitFor(
        async () => ((await readiness()) === undefined ? 0 : samples.filter((sample) => sample.start > from).length),
        (count) => count >= 3,
        { seconds: 20 },
      );
      await waitFor(
        async () => receiver.inFlight(),
        (count) => count === 0,
        { seconds: 20 },
      );
      const to = Date.now();
      outages.push({ from, to });
      postgres = await startEmbeddedPostgres({ dataDir, port });
      t.equal(
        await waitFor(readiness, (status) => status === 200, { seconds: 60 }),
        200,
        `round ${round}: readiness is 200 again once the database is back`,
      );
    }
    emitting = false;
    await emitter;

    // Every delivery of every event emitted ends delivered.
    const deliveries = () =>
      server.services
        .db("integrator.webhook_deliveries")
        .where({ tenant_id: tenant.tenantId })
        .select<{ id: string; status: string }[]>("id", "status");
    const final = await waitFor(deliveries, (rows) => rows.every((row) => row.status === "delivered"), {
      seconds: 120,
    });
    sampling = false;
    await sampler;

    t.equal(exited, undefined, "the service never exited");
    t.ok(final.length >= emitted * 2, `${final.length} deliveries of ${emitted} events`);
    t.same(
      final.filter((row) => row.status !== "delivered"),
      [],
      "every delivery is delivered",
    );
    const sends = new Map<string, number>();
    for (const request of receiver.received) {
      const id = String(request.headers["x-service-review-delivery"]);
      sends.set(id, (sends.get(id) ?? 0) + 1);
    }
    t.same(
      final.filter((row) => sends.get(row.id) !== 1).map((row) => ({ id: row.id, sends: sends.get(row.id) ?? 0 })),
      [],
      "every delivery reached its receiver exactly once",
    );
    t.equal(sends.size, final.length, "and nothing else did");

    const inside = (sample: ReadinessSample, window: { from: number; to: number }) =>
      sample.start > window.from && sample.end < window.to;
    for (const [i, outage] of outages.entries()) {
      const during = samples.filter((sample) => inside(sample, outage));
      t.ok(during.length > 0, `round ${i + 1}: readiness was asked while the database was away`);
      t.same(
        during.filter((sample) => sample.status !== 503),
        [],
        `round ${i + 1}: readiness answered 503 while the database was away (${during.length} times)`,
      );
    }
    // Where the job runner was down, from the service's own log lines.
    const lines = service.logLines();
    const time = (line: Record<string, unknown>) => Date.parse(String(line.time));
    const downs = lines.filter((line) => String(line.msg).startsWith("job runner down"));
    const ups = lines.filter((line) => line.msg === "job runner restarted");
    const runnerDown = downs.map((down) => ({
      from: time(down),
      to: time(ups.find((up) => time(up) >= time(down)) ?? { time: new Date().toISOString() }),
    }));
    for (const window of runnerDown)
      t.same(
        samples.filter((sample) => inside(sample, window) && sample.status === 200),
        [],
        `no 200 while the job runner was down (${window.to - window.from} ms)`,
      );
    t.equal(ups.length, downs.length, "every job runner that went down was restarted");
    t.comment(
      `${RESTARTS} restarts of PostgreSQL (away ${outages.map((o) => o.to - o.from).join(", ")} ms); ${emitted} events, ${final.length} deliveries, ${receiver.received.length} sends; the job runner went down ${downs.length} times${runnerDown.length > 0 ? ` (${runnerDown.map((w) => w.to - w.from).join(", ")} ms)` : ""}`,
    );
  },
);
