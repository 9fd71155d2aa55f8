// A worker whose graphile-worker job runner ends by itself for good (graphile-worker's notice of a
// breaking migration of its schema, as during a rolling upgrade) exits non-zero so that its supervisor
// restarts it, and readiness says so at once: its heartbeat goes with it, and a process that also serves
// the API answers readiness 503 while it drains. It used to stay up with a fresh heartbeat and a healthy
// readiness while no job ran. A normal stop (SIGTERM), which ends the runner too, still exits 0. (A runner
// lost to a database outage is started again inside the process: test/worker/runner-restart.test.ts.)
import t, { type Test } from "tap";
import { startMainProcess, type MainProcess } from "../helpers/main-process.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitFor } from "../helpers/wait.ts";

/** The environment of a process of `api`'s deployment (its database and ENCRYPTION_KEY). */
const processEnv = (t: Test, api: TestServer, env: Record<string, string> = {}) => ({
  NODE_ENV: "test",
  DATABASE_URL: api.databaseUrl,
  ENCRYPTION_KEY: api.env.ENCRYPTION_KEY ?? "",
  DATA_DIR: tempDir(t, "integrator-runner-end-"),
  PORT: "0",
  LOG_LEVEL: "info",
  ...env,
});

/** What graphile-worker's runner does on this notice: a graceful shutdown, its promise resolving without an error. */
const BREAKING_MIGRATION = `select pg_notify('worker:migrate', '{"migrationNumber": 999999, "breaking": true}')`;

/** The exit, or undefined when the process is still running after `seconds`. */
async function exitWithin(service: MainProcess, seconds: number) {
  let timeUp: (value: undefined) => void = () => undefined;
  const timedOut = new Promise<undefined>((resolve) => (timeUp = resolve));
  const timer = setTimeout(() => timeUp(undefined), seconds * 1000);
  try {
    return await Promise.race([service.exited, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

t.test("a worker process whose runner ends exits non-zero, and readiness elsewhere turns 503 at once", async (t) => {
  // Another API replica of the deployment, reading the shared heartbeats; staleness alone would take 300 s.
  const api = await startTestServer(t, { env: { HEALTH_WORKER_STALE_SECONDS: "300" } });
  const worker = await startMainProcess(t, processEnv(t, api), { args: ["--role=worker"] });
  const readiness = async () => (await api.request("/v1/readyz")).status;
  t.equal(await waitFor(readiness, (status) => status === 200), 200, "ready while the worker runs");

  await api.services.db.raw(BREAKING_MIGRATION);
  const exit = await exitWithin(worker, 30);
  t.ok(exit !== undefined && exit.code !== 0, `the process exited by itself, non-zero (${JSON.stringify(exit)})`);
  t.equal(await readiness(), 503, "readiness is 503 as soon as the process is gone, not after 300 s");
  const beats = await api.services.db("integrator.worker_heartbeats").count({ n: "*" });
  t.equal(Number(beats[0]?.n), 0, "its heartbeat went with it");
  t.ok(
    worker.logLines().some((line) => line.level === "error" && /job runner/.test(String(line.msg))),
    "an error line says why",
  );
});

t.test("a process serving the API too answers readiness 503 while it drains, then exits non-zero", async (t) => {
  const api = await startTestServer(t);
  const service = await startMainProcess(t, processEnv(t, api, { SHUTDOWN_DRAIN_SECONDS: "5" }), { args: [] });
  const readiness = () => fetch(`http://127.0.0.1:${service.port}/v1/readyz?scope=api`);
  t.equal((await readiness()).status, 200);
  await api.services.db.raw(BREAKING_MIGRATION);
  const draining = await waitFor(
    async () => (await readiness()).status,
    (status) => status === 503,
    { seconds: 10 },
  );
  t.equal(draining, 503, "503 at once, while the API drains");
  const exit = await exitWithin(service, 30);
  t.ok(exit !== undefined && exit.code !== 0, `then it exits non-zero (${JSON.stringify(exit)})`);
});

t.test("SIGTERM, which ends the runner too, is a normal stop: exit 0", async (t) => {
  const api = await startTestServer(t);
  const worker = await startMainProcess(t, processEnv(t, api), { args: ["--role=worker"] });
  worker.child.kill("SIGTERM");
  const exit = await exitWithin(worker, 30);
  t.same(exit, { code: 0, signal: null });
  t.notOk(
    worker.logLines().some((line) => line.level === "error" || line.level === "fatal"),
    "no error line",
  );
});
