// Graceful shutdown: on SIGTERM or SIGINT the service stops accepting connections, lets the request in
// flight finish with a proper response, stops the worker, closes the pool, stops the embedded PostgreSQL
// it started, and exits 0. Requests still running at SHUTDOWN_TIMEOUT_MS are cut off.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import t, { type Test } from "tap";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { createTenant } from "../../db/principals.ts";
import { registerUser } from "../../handlers/auth/principals.ts";
import { createDatabase } from "../../db/database.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startApiService } from "../helpers/service.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitFor as pollUntil } from "../helpers/wait.ts";
import { startMainProcess } from "../helpers/main-process.ts";

/** Polls `check` until it gives a value; throws naming `what` when `seconds` pass first. */
async function waitFor<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  seconds: number,
): Promise<T> {
  const value = await pollUntil(
    async () => check(),
    (candidate) => candidate !== undefined,
    { seconds },
  );
  if (value === undefined) throw new Error(`timed out waiting for ${what}`);
  return value;
}

/** `node app/main.ts` with every role (the worker too); a process still running when a test ends is killed. */
const startMain = (t: Test, env: Record<string, string>, seconds = 60) =>
  startMainProcess(t, env, { seconds, args: [], teardownSignal: "SIGKILL" });

/** true once connecting is refused (the listening socket is closed), false while it is accepted. */
function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

t.test(
  "SIGTERM with a request in flight: it completes, new connections are refused, the worker stops, exit 0",
  async (t) => {
    const databaseUrl = await createTestDatabase(t);
    const db = createDatabase(databaseUrl, 2);
    t.teardown(() => db.destroy());
    const tenant = await createTenant(db, "Shutdown tenant");
    const password = randomBytes(12).toString("base64url");
    await registerUser(db, { tenantId: tenant.id, username: "shutdown-user", password, roles: ["client_admin"] });

    const service = await startMain(t, {
      NODE_ENV: "test",
      DATABASE_URL: databaseUrl,
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      DATA_DIR: tempDir(t, "integrator-shutdown-"),
      PORT: "0",
      LOG_LEVEL: "info",
      SHUTDOWN_TIMEOUT_MS: "15000",
    });
    t.equal((await db("integrator.worker_heartbeats").count({ n: "*" }))[0]?.n, 1, "the worker (role all) is running");

    // The request is in flight once the server has read its headers: it answers Expect: 100-continue then.
    const form = new URLSearchParams({ grant_type: "password", username: "shutdown-user", password }).toString();
    const request = http.request({
      host: "127.0.0.1",
      port: service.port,
      method: "POST",
      path: "/token",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "Content-Length": Buffer.byteLength(form),
        Expect: "100-continue",
      },
    });
    const response = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        request.once("response", (res) => {
          let body = "";
          res.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
          res.once("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        });
        request.once("error", reject);
      },
    );
    await new Promise<void>((resolve) => request.once("continue", resolve));
    request.write(form.slice(0, 10));

    service.child.kill("SIGTERM");
    await waitFor(
      "new connections to be refused",
      async () => ((await connectionRefused(service.port)) ? true : undefined),
      10,
    );
    t.pass("new connections are refused while the request is in flight");

    request.end(form.slice(10));
    const finished = await response;
    t.equal(finished.status, 200, "the in-flight request completed");
    t.equal((JSON.parse(finished.body) as { token_type?: string }).token_type, "bearer");
    t.equal(finished.headers.connection, "close", "its connection is closed after the response");

    const { code, signal } = await service.exited;
    t.equal(code, 0, "exit code 0");
    t.equal(signal, null);
    const lines = service.logLines();
    t.ok(
      lines.some((line) => line.operationId === "issueToken" && line.status === 200),
      "the request's log line",
    );
    t.ok(
      lines.some((line) => line.msg === "shutdown complete"),
      "shutdown complete logged",
    );
    t.equal(
      (await db("integrator.worker_heartbeats").count({ n: "*" }))[0]?.n,
      0,
      "the worker stopped and removed its heartbeat",
    );
  },
);

t.test(
  "SIGINT on the embedded database: the demo curl line works, then the database is stopped cleanly and the exit is 0",
  async (t) => {
    const dataDir = tempDir(t, "integrator-embedded-");
    const pgPort = await freePort();
    const service = await startMain(
      t,
      {
        NODE_ENV: "development",
        DATA_DIR: dataDir,
        EMBEDDED_PG_PORT: String(pgPort),
        PORT: "0",
        LOG_LEVEL: "info",
        SHUTDOWN_TIMEOUT_MS: "10000",
      },
      120,
    );
    const curl = await waitFor("the demo curl line", () => /^curl .*$/m.exec(service.stdout())?.[0], 30);
    t.match(
      service.stdout(),
      /^Try it \(the token lives \d+ minutes\):$/m,
      "the human-readable hint is printed as plain text",
    );
    const token = /Bearer ([^']+)'/.exec(curl)?.[1];
    const body = /-d '([^']+)'/.exec(curl)?.[1];
    t.ok(token && body);
    const res = await fetch(`http://127.0.0.1:${service.port}/v1/intake/submit`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body,
    });
    t.equal(res.status, 201, "the printed curl line works");
    const portal = await waitFor(
      "the demo portal link",
      () => /^http:\/\/\S+\/portal#token=(\S+)$/m.exec(service.stdout()) ?? undefined,
      5,
    );
    const portalToken = portal?.[1];
    t.ok(portalToken, "a webhook portal link for the demo tenant is printed");
    const subscriptions = await fetch(`http://127.0.0.1:${service.port}/v1/webhooks/subscriptions`, {
      headers: { Authorization: `Bearer ${portalToken}` },
    });
    t.equal(subscriptions.status, 200, "the printed portal link's credential works");
    t.match(service.stdout(), /^The API reference: http:\/\/localhost:\d+\/docs$/m, "and the reference page is named");
    t.ok(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid")), "the embedded PostgreSQL runs");

    service.child.kill("SIGINT");
    const { code } = await service.exited;
    t.equal(code, 0, "exit code 0");
    t.notOk(
      fs.existsSync(path.join(dataDir, "pg", "postmaster.pid")),
      "PostgreSQL shut down cleanly (no postmaster.pid left)",
    );
    t.ok(await connectionRefused(pgPort), "nothing listens on the database port any more");
    t.ok(service.logLines().some((line) => line.msg === "shutdown complete"));
  },
);

t.test("a request still running at SHUTDOWN_TIMEOUT_MS is cut off and the stop reports it", async (t) => {
  const { running, port } = await startApiService(t, { SHUTDOWN_TIMEOUT_MS: "300" });

  // Headers promise a body that never comes.
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  socket.write(
    "POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n",
  );
  await new Promise<void>((resolve) => socket.once("data", () => resolve()));
  const socketClosed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => undefined);

  const started = Date.now();
  const stopping = running.stop("test");
  t.equal(running.stop("again"), stopping, "stop is idempotent");
  const report = await stopping;
  t.equal(report.cutOff, 1, "one request was cut off");
  t.equal(report.clean, false);
  t.same(report.errors, [], "every step of the stop still succeeded");
  t.ok(Date.now() - started < 5000, `stopped soon after the deadline (${Date.now() - started} ms)`);
  await socketClosed;
  t.pass("the stuck connection was closed");
});
