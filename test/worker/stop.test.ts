// The worker's own PostgreSQL pool (db/database.ts createWorkerPool). npm start stops its embedded
// PostgreSQL right after the worker; graphile-worker 0.17 ended a pool it had made without waiting and took
// the pool's error handler off first, so a connection still closing got PostgreSQL's "terminating
// connection" with no handler and the process crashed (seen in CI: npm start exited 1 on SIGTERM). The
// race is too narrow to reproduce here at will; these tests check what closes it: the pool's handlers
// catch a terminated connection, idle or checked out, and stop() ends the pool.
import t from "tap";
import { createWorkerPool } from "../../db/database.ts";
import { startWorker } from "../../worker/runner.ts";
import { startTestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

t.test("a connection PostgreSQL terminates, idle or checked out, is reported, not thrown", async (t) => {
  const server = await startTestServer(t);
  const errors: string[] = [];
  const pool = createWorkerPool(server.databaseUrl, (message) => errors.push(message));
  t.teardown(() => pool.end());
  const terminate = (pid: number) => server.services.db.raw("select pg_terminate_backend(?)", [pid]);
  const pidOf = async (client: { query: (sql: string) => Promise<{ rows: { pid: number }[] }> }) =>
    (await client.query("select pg_backend_pid() as pid")).rows[0]?.pid ?? 0;
  /** The first error reported with this prefix, once there is one. */
  const reported = (prefix: string) =>
    waitFor(
      async () => errors.find((message) => message.startsWith(prefix)),
      (found) => found !== undefined,
    );

  const idle = await pool.connect();
  const idlePid = await pidOf(idle);
  idle.release();
  await terminate(idlePid);
  t.match(
    await reported("PostgreSQL idle client"),
    /terminating connection/,
    "an idle client's error reaches the handler",
  );

  const busy = await pool.connect();
  await terminate(await pidOf(busy));
  t.match(
    await reported("PostgreSQL active client"),
    /terminating connection/,
    "a checked-out client's error reaches the handler",
  );
  busy.release(true);
});

t.test("the worker's connections are named integrator-worker, and stopping it closes them", async (t) => {
  const server = await startTestServer(t);
  const named = async () =>
    Number(
      (
        await server.services.db.raw<{ rows: { n: string }[] }>(
          "select count(*) as n from pg_stat_activity where datname = current_database() and application_name = 'integrator-worker'",
        )
      ).rows[0]?.n,
    );
  const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 200 });
  t.ok((await named()) > 0, "the running worker's connections are named integrator-worker");
  await worker.stop();
  t.equal(
    await waitFor(named, (n) => n === 0, { seconds: 10 }),
    0,
    "none is left once stop() has returned and PostgreSQL has seen them go",
  );
});
