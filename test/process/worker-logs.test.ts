// What the worker does on its own reaches the process's log: releasing the jobs of a worker that stopped
// heart-beating (warn), and what each scheduled purge removed (info). graphile-worker's line per completed
// job stays at debug. Read from the real process's JSON log lines on stdout.
import { randomBytes } from "node:crypto";
import t from "tap";
import { createDatabase } from "../../db/database.ts";
import { JOB } from "../../db/jobs.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startMainProcess } from "../helpers/main-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitFor } from "../helpers/wait.ts";

t.test("the worker's releases and purges are logged", async (t) => {
  const databaseUrl = await createTestDatabase(t);
  const db = createDatabase(databaseUrl, 2);
  t.teardown(() => db.destroy());
  // Two purge jobs held by a runner no heartbeat names, locked an hour ago: a worker killed mid-job.
  for (const task of [JOB.purgeIdempotencyKeys, JOB.purgeWebhookDeliveries])
    await db.raw("select graphile_worker.add_job(?, '{}'::json)", [task]);
  await db.raw(
    "update graphile_worker._private_jobs set locked_by = 'dead-runner-1', locked_at = now() - interval '1 hour'",
  );

  const service = await startMainProcess(
    t,
    {
      NODE_ENV: "test",
      DATABASE_URL: databaseUrl,
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      DATA_DIR: tempDir(t, "integrator-worker-logs-"),
      PORT: "0",
      LOG_LEVEL: "info",
      WORKER_DEAD_AFTER_SECONDS: "30",
    },
    { args: [] },
  );
  const line = (test: (line: Record<string, unknown>) => boolean) =>
    waitFor(
      async () => service.logLines().find(test),
      (found) => found !== undefined,
      { seconds: 30 },
    );

  const released = await line((entry) => String(entry.msg).includes("released the jobs of stopped workers"));
  t.match(released, { level: "warn", component: "worker", runner_ids: ["dead-runner-1"] }, "the release, at warn");

  const keys = await line((entry) => entry.task === JOB.purgeIdempotencyKeys);
  t.match(keys, { level: "info", component: "worker", purged: 0 }, "the idempotency-key purge and its count");
  const deliveries = await line((entry) => entry.task === JOB.purgeWebhookDeliveries);
  t.match(
    deliveries,
    { level: "info", component: "worker", purged: 0, retention_days: Number },
    "the delivery purge, its count and its retention",
  );

  t.same(
    service.logLines().filter((entry) => String(entry.msg).startsWith("Completed task")),
    [],
    "graphile-worker's line per completed job is not written at info",
  );
});
