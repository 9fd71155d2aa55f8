// While the database is away, everything the service writes to stdout stays a JSON line: knex's
// warnings (failed acquires with their stacks) and connection errors go through the logger.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import t from "tap";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { createDatabase, startEmbeddedPostgres } from "../../db/database.ts";
import { migrateAll } from "../../app/services.ts";
import { waitFor } from "../helpers/wait.ts";
import { processEnv } from "../helpers/main-process.ts";

const MAIN = path.join(import.meta.dirname, "..", "..", "app", "main.ts");

t.test("every stdout line is JSON while the database is down", async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-outage-"));
  const postgres = await startEmbeddedPostgres({ dataDir, port: await freePort() });
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await postgres.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const migrator = createDatabase(postgres.url, 2);
  await migrateAll(migrator, postgres.url);
  await migrator.destroy();

  const child = spawn(process.execPath, [MAIN], {
    env: processEnv({
      NODE_ENV: "test",
      DATABASE_URL: postgres.url,
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      DATA_DIR: dataDir,
      PORT: "0",
      LOG_LEVEL: "debug",
      LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
      SHUTDOWN_TIMEOUT_MS: "3000",
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  child.stderr.on("data", () => undefined);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });

  const port = await waitFor(
    async () => /"port":(\d+)[^\n]*listening on/.exec(out)?.[1],
    (found) => found !== undefined,
    { seconds: 60 },
  );
  const base = `http://127.0.0.1:${port}`;

  await postgres.stop();
  stopped = true;
  // Requests that need the database, for a few seconds, while the worker polls and the pool retries.
  const until = Date.now() + 4000;
  const statuses = new Set<number>();
  while (Date.now() < until) {
    for (const pathname of ["/v1/readyz", "/.well-known/jwks.json", "/v1/health"])
      statuses.add((await fetch(`${base}${pathname}`)).status);
    statuses.add(
      (
        await fetch(`${base}/token`, {
          method: "POST",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
          body: "grant_type=password&username=u&password=p",
        })
      ).status,
    );
  }
  t.ok(statuses.has(503), `the database being away shows (${[...statuses].join(", ")})`);
  child.kill("SIGTERM");
  await exited;

  const lines = out.split("\n").filter((line) => line.length > 0);
  const plain = lines.filter((line) => {
    try {
      return typeof JSON.parse(line) !== "object";
    } catch {
      return true;
    }
  });
  t.same(plain.slice(0, 5), [], `every one of ${lines.length} stdout lines is JSON`);
  t.ok(
    lines.some((line) => line.includes('"component":"database"')),
    "the database layer's complaints are there, as log lines",
  );
});
