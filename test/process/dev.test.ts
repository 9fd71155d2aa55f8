// npm run dev on a copy of the repository: the document is edited as a team edits it, and the loop must run
// every contract check on it, report every failure the edit causes (lint and type errors at once) with a
// verdict timed from the save, and restart on the new document; a code change restarts the service; a
// document that does not generate leaves the running service alone.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import t from "tap";
import { createTestDatabase } from "../helpers/database.ts";
import { copyRepository, editFile } from "../helpers/repository-copy.ts";
import { waitFor } from "../helpers/wait.ts";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import { processEnv } from "../helpers/main-process.ts";

// The loop typechecks the copy: minutes on a busy machine.
t.setTimeout(600_000);

const HEALTH_STATUS_PROPERTY = `      required: [status, checks]
      properties:
        status:
          $ref: '#/components/schemas/HealthStatus'
`;

t.test("npm run dev regenerates, relints, reports type errors and restarts on a change of the document", async (t) => {
  const copy = copyRepository(t, "integrator-dev-");
  const port = await freePort();
  const child = spawn(process.execPath, ["scripts/dev.ts"], {
    cwd: copy,
    env: processEnv({
      NODE_ENV: "development",
      PORT: String(port),
      METRICS_PORT: "0",
      DATABASE_URL: await createTestDatabase(t),
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      DATA_DIR: path.join(copy, ".data"),
      LOG_LEVEL: "info",
      LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  });

  const served = async (): Promise<Record<string, unknown> | undefined> => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/openapi.json`);
      return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };
  type Served = { components?: { schemas?: { HealthResponse?: { properties?: Record<string, unknown> } } } };
  const healthProperties = (document: Record<string, unknown> | undefined): Record<string, unknown> =>
    (document as Served | undefined)?.components?.schemas?.HealthResponse?.properties ?? {};
  const restarts = () => output.match(/\[dev\] restarting the service/g)?.length ?? 0;
  /** How many times a service has started listening (main.ts logs it at info). */
  const starts = () => output.match(/listening on http/g)?.length ?? 0;

  const first = await waitFor(served, (document) => document !== undefined, { seconds: 90 });
  t.ok(first, `the service answers on its port (${output.slice(-2000)})`);
  t.notOk("region" in healthProperties(first), "the field is not in the document yet");

  // The failing document comes first and the field is added in its place, so that one run of the loop
  // (generate, lint, typecheck, restart) shows both what a document that generates does and that the fixed
  // document restarts the service.
  const unclosed = `${HEALTH_STATUS_PROPERTY}          enum: [unclosed\n`;

  t.test("a document that does not generate leaves the service running as it was", async (t) => {
    const before = restarts();
    editFile(copy, "openapi/openapi.yaml", HEALTH_STATUS_PROPERTY, unclosed);
    // The report's last line: the lines before it arrive first.
    await waitFor(
      async () => output,
      (text) => text.includes("the service keeps running on the last document that generated"),
      { seconds: 60 },
    );
    t.match(output, /\[dev\] ✗ generate/);
    t.match(output, "is not valid YAML");
    t.match(output, /\[dev\] ✗ lint/, "every check that can run on it reports");
    t.match(output, /\[dev\] ✗ breaking/);
    t.match(output, "[dev] – typecheck: not run: the document does not generate");
    t.match(
      output,
      /\[dev\] 3 of 5 checks failed \(generate, lint, breaking\); typecheck and reads not run, [\d.]+ s from the save to this verdict/,
    );
    t.match(output, "the service keeps running on the last document that generated");
    t.equal(restarts(), before, "no restart");
    const still = await served();
    t.ok(still, "the last good document is still served");
    t.notOk("region" in healthProperties(still), "as it was");
  });

  t.test("the document fixed, with a field added and required of a response: served after the loop", async (t) => {
    editFile(
      copy,
      "openapi/openapi.yaml",
      unclosed,
      `      required: [status, checks, region]
      properties:
        region:
          type: string
          description: The region this instance runs in.
        status:
          $ref: '#/components/schemas/HealthStatus'
`,
    );
    // /openapi.json is read from disk, so it shows the field as soon as generate has run: what counts is a
    // service started after the loop.
    await waitFor(
      async () => starts(),
      (count) => count > 1,
      { seconds: 240, intervalMs: 250 },
    );
    t.equal(starts(), 2, `the service restarted once (${output.slice(-3000)})`);
    const next = await waitFor(served, (document) => document !== undefined, { seconds: 90 });
    t.ok("region" in healthProperties(next), `the new field is served (${output.slice(-3000)})`);
    t.match(output, /\[dev\] ✓ generate/);
    t.match(output, "wrote     generated/openapi.ts");
    t.match(output, /\[dev\] ✗ lint/, "the document's examples lack the required field");
    t.match(output, /error no-invalid-schema-examples: .*'region'.*\(schema HealthResponse/);
    t.match(output, /\[dev\] ✗ typecheck/, "the required field the handler does not return is a type error");
    t.match(output, /handlers\/probes\/[\w-]+\.ts\(\d+,\d+\): error TS\d+: .*region/);
    t.match(output, /\[dev\] ✓ breaking/, "every check runs");
    t.match(output, /\[dev\] ✓ reads/);
    t.match(
      output,
      /\[dev\] 2 of 5 checks failed \(lint, typecheck\), [\d.]+ s from the save to this verdict/,
      "both failures in one run, and how long it took",
    );
    const restart = output.lastIndexOf("restarting the service (document changed)");
    t.ok(output.indexOf("✗ generate") < output.indexOf("✓ generate"), "after the failed run of the loop");
    t.ok(output.indexOf("✗ typecheck") < restart, "reported before the restart");
    t.ok(restart < output.lastIndexOf("listening on http"), "and the service started after it");
  });

  t.test("a code change restarts the service", async (t) => {
    const before = restarts();
    editFile(
      copy,
      "handlers/auth/index.ts",
      'headers: { "Cache-Control": "public, max-age=300" },',
      'headers: { "Cache-Control": "public, max-age=300", "X-Dev-Loop": "restarted" },',
    );
    const res = await waitFor(
      async () => {
        try {
          return await fetch(`http://127.0.0.1:${port}/.well-known/jwks.json`);
        } catch {
          return undefined;
        }
      },
      (answer) => answer?.headers.get("x-dev-loop") === "restarted",
      { seconds: 90, intervalMs: 250 },
    );
    t.equal(res?.headers.get("x-dev-loop"), "restarted", output.slice(-2000));
    t.ok(restarts() > before);
    t.match(output, "restarting the service (code changed)");
    t.notMatch(
      output,
      "(portal changed)",
      "the loop's own writes (the typecheck's buildinfo in portal/) restart nothing",
    );
  });

  t.test("Ctrl-C stops the service and the loop", async (t) => {
    child.kill("SIGINT");
    t.equal(await exited, 0);
    t.equal(await served(), undefined, "nothing answers any more");
  });
});
