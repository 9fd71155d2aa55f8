// Starts the real application on a loopback port against a test database of its own.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { randomBytes, randomUUID } from "node:crypto";
import type { DestinationStream } from "pino";
import type { Test } from "tap";
import { createApp, logUnexpectedError } from "../../http/app.ts";
import { connectListenWakeUps } from "../../app/lifecycle.ts";
import { buildServices } from "../../app/services.ts";
import { loadConfig } from "../../foundation/config.ts";
import { createDatabase } from "../../db/database.ts";
import { databaseLog } from "../../foundation/database-log.ts";
import { createLogger } from "../../foundation/logger.ts";
import type { Services } from "../../foundation/services.ts";
import { createTenant } from "../../db/principals.ts";
import { registerUser } from "../../handlers/auth/principals.ts";
import { handlers as allHandlers } from "../../handlers/index.ts";
import type { HandlerTable } from "../../http/operations.ts";
import { recordServedOperations } from "../../scripts/operation-coverage.ts";
import { createTestDatabase } from "./database.ts";

export interface TestServer {
  baseUrl: string;
  services: Services;
  databaseUrl: string;
  errors: unknown[];
  /** The environment the server was configured from (DATABASE_URL, ENCRYPTION_KEY, ...), e.g. for a child process. */
  env: Record<string, string>;
  /** fetch against the server; path is relative to baseUrl. */
  request(pathname: string, init?: RequestInit & { token?: string; json?: unknown }): Promise<Response>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  /** Receives the server's JSON log lines (LOG_LEVEL defaults to debug then, else silent). */
  logDestination?: DestinationStream;
  handlers?: Partial<HandlerTable>;
  databaseUrl?: string;
}

export async function startTestServer(t: Test, options: TestServerOptions = {}): Promise<TestServer> {
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase(t));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-data-"));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = {
    NODE_ENV: "test",
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    LOG_LEVEL: options.logDestination ? "debug" : "silent",
    DB_POOL_MAX: "5",
    // Limits and load shedding are exercised by their own tests with explicit settings; elsewhere they
    // would only make results depend on how fast and how busy the machine is.
    RATE_LIMIT_PER_MINUTE: "100000",
    RATE_LIMIT_ANON_PER_MINUTE: "100000",
    RATE_LIMIT_PROBE_PER_MINUTE: "100000",
    CALLBACK_CONCURRENCY_PER_ADDRESS: "10000",
    LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
    LOAD_SHED_DB_PENDING_ACQUIRES: "0",
    ...options.env,
  };
  const config = loadConfig(env);
  const logger = createLogger({
    level: config.logLevel,
    ...(options.logDestination ? { destination: options.logDestination } : {}),
  });
  // knex's warnings (a failed acquire, with its stack) go to the logger, as in the service (app/lifecycle.ts).
  const db = createDatabase(databaseUrl, config.dbPoolMax, "integrator-test", databaseLog(logger));
  const services = await buildServices(config, db, logger);
  const errors: unknown[] = [];
  const app = await createApp(services, {
    handlers: options.handlers ?? allHandlers,
    logError: (error, req) => {
      errors.push(error);
      logUnexpectedError(services.logger, error, req);
    },
  });
  // Listen sessions' polls are woken by the worker's offers, as in the service (app/lifecycle.ts).
  const notifications = connectListenWakeUps(services, databaseUrl);
  const server = http.createServer(app);
  // The whole suite must exercise every operation of the document (scripts/test.ts).
  recordServedOperations(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  t.teardown(async () => {
    services.listenWakeUps.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await notifications.close();
    await db.destroy();
  });
  return {
    baseUrl,
    services,
    databaseUrl,
    errors,
    env,
    request(pathname, init = {}) {
      const { token, json, headers, ...rest } = init;
      const merged = new Headers(headers);
      if (token) merged.set("Authorization", `Bearer ${token}`);
      let body = rest.body;
      if (json !== undefined) {
        body = JSON.stringify(json);
        if (!merged.has("Content-Type")) merged.set("Content-Type", "application/json");
      }
      return fetch(`${baseUrl}${pathname}`, { ...rest, headers: merged, ...(body === undefined ? {} : { body }) });
    },
  };
}

/** Another API process of the same deployment: `of`'s database and ENCRYPTION_KEY, with `env` for its other settings. */
export function startReplica(t: Test, of: TestServer, env: Record<string, string> = {}): Promise<TestServer> {
  return startTestServer(t, {
    databaseUrl: of.databaseUrl,
    env: { ...env, ENCRYPTION_KEY: of.env.ENCRYPTION_KEY ?? "" },
  });
}

export interface TestTenant {
  tenantId: string;
  token: string;
  subject: string;
}

/** A new tenant and a token for it (client_admin unless roles say otherwise). */
export async function createTestTenant(
  services: Services,
  roles: string[] = ["client_admin"],
  name = "Test tenant",
): Promise<TestTenant> {
  const tenant = await createTenant(services.db, name);
  const subject = `user-${randomBytes(4).toString("hex")}`;
  const { token } = await services.tokens.issue({ subject, tenantId: tenant.id, roles });
  return { tenantId: tenant.id, token, subject };
}

export async function createTestUser(
  services: Services,
  tenantId: string,
  roles: string[] = ["client_admin"],
): Promise<{ username: string; password: string }> {
  const username = `user-${randomBytes(5).toString("hex")}`;
  const password = randomBytes(12).toString("base64url");
  await registerUser(services.db, { tenantId, username, password, roles });
  return { username, password };
}

/** POST /token with a form body, as an OAuth2 client sends it. */
export function tokenRequest(
  server: TestServer,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return server.request("/token", {
    method: "POST",
    body: new URLSearchParams(fields).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
  });
}

/** A protected read that only tells whether `token` is accepted: a submission that does not exist (404 when it is). */
export function pollWithToken(server: TestServer, token: string): Promise<Response> {
  return server.request(`/v1/intake/submissions/${randomUUID()}`, { token });
}
