// A start whose port another program holds (a second `npm start` beside the first, most often) stops with
// one sentence naming the port and its setting, and leaves nothing running: not a log line with a stack.
import { randomBytes } from "node:crypto";
import net from "node:net";
import t from "tap";
import { createTestDatabase } from "../helpers/database.ts";
import { runMainToExit } from "../helpers/main-process.ts";

/** A port held by a server of this test, on every address, as another process's listening port would be. */
async function heldPort(t: Parameters<typeof createTestDatabase>[0]): Promise<number> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, resolve));
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const address = holder.address();
  if (typeof address !== "object" || address === null) throw new Error("the holder has no port");
  return address.port;
}

const environment = async (t: Parameters<typeof createTestDatabase>[0]) => ({
  NODE_ENV: "development",
  DATABASE_URL: await createTestDatabase(t),
  ENCRYPTION_KEY: randomBytes(32).toString("hex"),
  LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
});

t.test("the API's port in use: one sentence naming PORT, exit code 1", async (t) => {
  const port = await heldPort(t);
  const { code, stdout, stderr } = await runMainToExit({ ...(await environment(t)), PORT: String(port) }, []);
  t.equal(code, 1, "exit code 1");
  t.equal(
    stderr,
    `Start-up failed: port ${port} (PORT) is already in use, perhaps by another start of this service: stop it, or set PORT to a free port\n`,
  );
  t.notMatch(stdout + stderr, /"stack"|\n\s+at |"level":60/, "no stack trace and no fatal log line");
});

t.test("the metrics port in use: one sentence naming METRICS_PORT, exit code 1", async (t) => {
  const port = await heldPort(t);
  const { code, stdout, stderr } = await runMainToExit(
    { ...(await environment(t)), PORT: "0", METRICS_PORT: String(port) },
    ["--role=worker"],
  );
  t.equal(code, 1, "exit code 1");
  t.match(stderr, new RegExp(`^Start-up failed: port ${port} \\(METRICS_PORT\\) is already in use`));
  t.equal(stderr.trim().split("\n").length, 1, "one line");
  t.notMatch(stdout + stderr, /"stack"|\n\s+at |"level":60/, "no stack trace and no fatal log line");
});
