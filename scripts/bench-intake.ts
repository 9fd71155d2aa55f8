// npm run bench:intake — a benchmark, not a test. On an embedded PostgreSQL: requests/s and p50/p99
// latency of single submit without and with an Idempotency-Key, a 100-item batch, and, as the
// yardstick, a minimal express + pg endpoint that inserts one row with no auth or validation.
import { execFile } from "node:child_process";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import express from "express";
import pg from "pg";
import { createApp } from "../server/http/app.ts";
import { pino } from "pino";
import { buildServices, migrateAll } from "../server/lifecycle.ts";
import { createLogger } from "../server/logger.ts";
import { loadConfig } from "../server/config.ts";
import { createDatabase } from "../db/database.ts";
import { createTenant } from "../db/principals.ts";
import { handlers } from "../handlers/index.ts";
import { throwawayPostgres, withDatabase } from "./throwaway-postgres.ts";

const DURATION = Number(process.env.BENCH_DURATION_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const run = promisify(execFile);

interface Figures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
}

async function listen(app: http.RequestListener): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function load(scenario: Record<string, unknown>): Promise<Figures> {
  const loader = path.join(path.dirname(new URL(import.meta.url).pathname), "bench", "load.ts");
  const { stdout } = await run(
    process.execPath,
    [loader, JSON.stringify({ connections: CONNECTIONS, duration: DURATION, ...scenario })],
    { maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout) as Figures;
}

const postgres = await throwawayPostgres("integrator-bench");
const admin = new pg.Client({ connectionString: postgres.adminUrl });
await admin.connect();
await admin.query("drop database if exists integrator_bench");
await admin.query("create database integrator_bench");
await admin.end();
const databaseUrl = withDatabase(postgres.adminUrl, "integrator_bench");

// One principal sends every request: lift its rate limit (600 a minute by default) unless the environment sets one.
const config = loadConfig({
  RATE_LIMIT_PER_MINUTE: "1000000",
  ...process.env,
  NODE_ENV: "production",
  DATABASE_URL: databaseUrl,
  ENCRYPTION_KEY: randomBytes(32).toString("hex"),
  LOG_LEVEL: "info",
});
const db = createDatabase(databaseUrl, config.dbPoolMax);
await migrateAll(db, databaseUrl);
// Logged as in production (one JSON line per request, redaction included), into /dev/null.
const services = await buildServices(
  config,
  db,
  createLogger({ level: config.logLevel, destination: pino.destination({ dest: "/dev/null", sync: false }) }),
);
const tenant = await createTenant(db, "Bench tenant");
const { token } = await services.tokens.issue({
  subject: "bench",
  tenantId: tenant.id,
  roles: ["client_admin"],
  expiresInSeconds: 3600,
});
const api = await listen(await createApp(services, { handlers }));

// The yardstick: the least an HTTP endpoint that stores a row can do.
const pool = new pg.Pool({ connectionString: databaseUrl, max: config.dbPoolMax });
await pool.query(
  "create table if not exists bench_minimal (id uuid primary key default gen_random_uuid(), body jsonb not null, created_at timestamptz not null default now())",
);
const minimalApp = express();
minimalApp.use(express.json());
minimalApp.post("/insert", async (req, res) => {
  const { rows } = await pool.query("insert into bench_minimal (body) values ($1) returning id, created_at", [
    req.body,
  ]);
  res.status(201).json(rows[0]);
});
const minimal = await listen(minimalApp);

const single = JSON.stringify({
  filename: "contract.pdf",
  file_size: 48213,
  mime_type: "application/pdf",
  external_reference: "bench",
  item_metadata: { matter: "A-1" },
});
const batch = JSON.stringify({
  items: Array.from({ length: 100 }, (_, i) => ({
    filename: `doc-${i}.pdf`,
    file_size: 1000 + i,
    mime_type: "application/pdf",
  })),
  external_reference: "bench-batch",
});
const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };

const scenarios: [string, Record<string, unknown>][] = [
  [
    "minimal express + pg insert (yardstick)",
    { url: `${minimal.url}/insert`, method: "POST", headers: { "Content-Type": "application/json" }, body: single },
  ],
  ["submit, no Idempotency-Key", { url: `${api.url}/v1/intake/submit`, method: "POST", headers: auth, body: single }],
  [
    "submit, fresh Idempotency-Key each",
    { url: `${api.url}/v1/intake/submit`, method: "POST", headers: auth, body: single, uniqueIdempotencyKey: true },
  ],
  [
    "submit, replay of one Idempotency-Key",
    {
      url: `${api.url}/v1/intake/submit`,
      method: "POST",
      headers: { ...auth, "Idempotency-Key": "bench-replay" },
      body: single,
    },
  ],
  ["batch of 100 items", { url: `${api.url}/v1/intake/batch`, method: "POST", headers: auth, body: batch }],
];

// BENCH_ONLY=batch runs the scenarios whose name contains the text (the yardstick always runs).
const only = process.env.BENCH_ONLY;
const selected = only ? scenarios.filter(([name], index) => index === 0 || name.includes(only)) : scenarios;
const results: [string, Figures][] = [];
for (const [name, scenario] of selected) {
  process.stderr.write(`running: ${name} (${DURATION} s, ${CONNECTIONS} connections)\n`);
  results.push([name, await load(scenario)]);
}

const yardstick = results[0]?.[1].requestsPerSecond ?? 1;
const cpu = os.cpus()[0]?.model ?? "unknown CPU";
const lines = [
  `Machine: ${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, PostgreSQL embedded, pool ${config.dbPoolMax}, request logs at info to /dev/null, ${CONNECTIONS} connections, ${DURATION} s each`,
  "",
  "| Scenario | req/s | p50 ms | p99 ms | vs yardstick | non-2xx |",
  "|---|---:|---:|---:|---:|---:|",
  ...results.map(
    ([name, f]) =>
      `| ${name} | ${f.requestsPerSecond.toFixed(0)} | ${f.p50} | ${f.p99} | ${(f.requestsPerSecond / yardstick).toFixed(2)}× | ${f.non2xx + f.errors} |`,
  ),
];
process.stdout.write(`${lines.join("\n")}\n`);

await api.close();
await minimal.close();
await pool.end();
await db.destroy();
await postgres.stop();
