// Starting and stopping one process of the service (role all, api or worker), apart from signals and
// process.exit so that tests can drive it. Starting: open (or start) the database, migrate it, build the
// services (app/services.ts, which the admin CLI, the benchmarks and the tests use too), then run the
// worker and the API by role. Stopping: the API stops accepting connections and lets
// in-flight requests finish, while the worker lets running jobs finish (graphile-worker releases those
// still running at the deadline back to the queue); both within SHUTDOWN_TIMEOUT_MS. Then the metrics
// server, the pool and, when this process started it, the embedded PostgreSQL are closed.
import { databaseLog } from "../foundation/database-log.ts";
import { listenForNotifications, type NotificationListener } from "../db/notifications.ts";
import { LISTEN_OFFERS_CHANNEL } from "../db/webhooks/listen-sessions.ts";
import type { Logger } from "../foundation/logger.ts";
import { startWorker, type WorkerHandle } from "../worker/runner.ts";
import { buildServices, migrateAll, openDatabase, type DatabaseHandle } from "./services.ts";
import { handlers } from "../handlers/index.ts";
import { createApp } from "../http/app.ts";
import type { Config } from "../foundation/config.ts";
import { stopEventLoopMonitor } from "../http/load-shedding.ts";
import { startMetricsServer, type MetricsServer } from "../foundation/metrics.ts";
import type { ProcessState, Services } from "../foundation/services.ts";
import { checkHealth } from "../handlers/probes/health-checks.ts";
import { TimeoutError, withTimeout } from "../foundation/timeouts.ts";
import { errorMessage } from "../foundation/error-message.ts";
import { createApiServer } from "../http/server.ts";
import { listenOn } from "../foundation/ports.ts";

/**
 * Wakes the listen sessions' polls waiting in this process when the worker (of any process) offers their
 * session a delivery: PostgreSQL's notifications, on a connection of their own.
 */
export function connectListenWakeUps(services: Services, databaseUrl: string): NotificationListener {
  const { listenWakeUps, logger } = services;
  return listenForNotifications(databaseUrl, LISTEN_OFFERS_CHANNEL, {
    onNotification: (payload) => listenWakeUps.wake(payload),
    onConnected: (connected) => (listenWakeUps.connected = connected),
    onError: (message) => logger.warn({ component: "listen-sessions" }, message),
  });
}

export type Role = "all" | "api" | "worker";

export interface StopReport {
  /** Every step finished and no request had to be cut off. */
  clean: boolean;
  /** In-flight requests whose connections were closed at the deadline. */
  cutOff: number;
  errors: string[];
}

export interface RunningService {
  role: Role;
  services: Services;
  database: DatabaseHandle;
  /** The API's bound port (role all or api). */
  port: number | undefined;
  metricsPort: number | undefined;
  /**
   * Settles when a part of the process ends by itself for good, with why (the worker's job runner after a
   * breaking migration of graphile-worker's schema: no job would run any more): the process should stop and
   * exit non-zero, so that its supervisor starts it again. Never settles otherwise.
   */
  failed: Promise<string>;
  /** Idempotent: a second call returns the first call's report. */
  stop(reason: string): Promise<StopReport>;
}

export async function startService(config: Config, role: Role, logger: Logger): Promise<RunningService> {
  const database = await openDatabase(config, {
    applicationName: `integrator-${role}`,
    onLog: (line) => logger.debug({ component: "embedded-postgres" }, line),
    log: databaseLog(logger),
  });
  let worker: WorkerHandle | undefined;
  let api: ReturnType<typeof createApiServer> | undefined;
  let metrics: MetricsServer | undefined;
  let notifications: NotificationListener | undefined;
  let port: number | undefined;
  try {
    await migrateAll(database.db, database.url);
    const services = await buildServices(config, database.db, logger);
    const state: ProcessState = { shuttingDown: false };
    services.state = state;
    if (role !== "api") worker = await startWorker(services, database.url);
    if (role !== "worker") {
      if (config.isProduction && !config.trustProxySet) {
        logger.warn(
          { setting: "TRUST_PROXY" },
          "TRUST_PROXY is not set: every client is identified by the socket's peer address. Behind a proxy or load balancer all clients share that proxy's address and therefore one set of per-address rate limits; set TRUST_PROXY to the proxy's addresses (or hop count), or to false to confirm there is no proxy.",
        );
      }
      notifications = connectListenWakeUps(services, database.url);
      api = createApiServer(await createApp(services, { handlers }), config.http);
      const server = api.server;
      await listenOn(server, config.port, undefined, "PORT");
      const address = server.address();
      port = typeof address === "object" && address ? address.port : config.port;
    }
    if (config.metricsPort > 0)
      metrics = await startMetricsServer(services, {
        port: config.metricsPort,
        host: config.metricsHost,
        healthReport: () => checkHealth(services),
      });

    let stopping: Promise<StopReport> | undefined;
    const stop = async (reason: string): Promise<StopReport> => {
      const started = Date.now();
      const timeoutMs = config.shutdownTimeoutMs;
      // Readiness answers 503 from here on; the API keeps answering through the drain window.
      state.shuttingDown = true;
      // Waiting polls of listen sessions answer now; new ones are answered 503 (handlers/webhooks/listen-sessions.ts).
      services.listenWakeUps.close();
      const drainMs = api ? config.shutdownDrainSeconds * 1000 : 0;
      logger.info({ reason, timeout_ms: timeoutMs, drain_ms: drainMs }, "shutting down");
      const errors: string[] = [];
      const [drained, workerStopped] = await Promise.allSettled([
        api ? api.drain(timeoutMs, drainMs) : Promise.resolve(0),
        // graphile-worker aborts running jobs at the deadline; the margin lets it release them.
        worker ? withTimeout(worker.stop(), timeoutMs + 5000, "stopping the worker") : Promise.resolve(),
      ]);
      const cutOff = drained.status === "fulfilled" ? drained.value : 0;
      if (drained.status === "rejected") errors.push(`http: ${errorMessage(drained.reason)}`);
      if (cutOff > 0) logger.warn({ cut_off: cutOff }, "shutdown deadline passed: in-flight requests were cut off");
      if (workerStopped.status === "rejected") {
        errors.push(
          workerStopped.reason instanceof TimeoutError
            ? "worker: did not stop in time"
            : `worker: ${errorMessage(workerStopped.reason)}`,
        );
      }
      await metrics?.close().catch((error: unknown) => errors.push(`metrics: ${errorMessage(error)}`));
      await notifications?.close();
      stopEventLoopMonitor();
      await database.close().catch((error: unknown) => errors.push(`database: ${errorMessage(error)}`));
      const report = { clean: errors.length === 0 && cutOff === 0, cutOff, errors };
      if (errors.length > 0)
        logger.error({ errors, duration_ms: Date.now() - started }, "shutdown finished with errors");
      else logger.info({ duration_ms: Date.now() - started, cut_off: cutOff }, "shutdown complete");
      return report;
    };
    return {
      role,
      services,
      database,
      port,
      metricsPort: metrics?.port,
      failed: worker?.ended ?? new Promise<string>(() => undefined),
      stop: (reason) => (stopping ??= stop(reason)),
    };
  } catch (error) {
    // Leave nothing running behind a failed start: above all not an embedded PostgreSQL.
    if (api?.server.listening) await api.drain(0).catch(() => undefined);
    await metrics?.close().catch(() => undefined);
    await notifications?.close();
    await worker?.stop().catch(() => undefined);
    await database.close().catch(() => undefined);
    throw error;
  }
}
