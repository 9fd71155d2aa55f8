// npm run bench:intake — a benchmark, not a test. The real application in-process (production settings:
// no response validation, request logs at info into /dev/null, the per-principal rate limit lifted) on a
// throwaway embedded PostgreSQL, against a floor in the same process and database: a bare express + pg
// endpoint inserting one row. The load generator (autocannon) runs in a child process. Rounds alternate
// floor and service segment by segment, so every figure that counts is a ratio against the floor
// measured right before it, on a machine other work shares.
//
//   npm run bench:intake                        quick: 8 and 32 connections, 2 rounds of 3 s segments
//   npm run bench:intake -- --rounds 3 --duration 8 --connections 8
//   npm run bench:intake -- --only batch        scenarios whose name contains the text
//   npm run bench:intake -- --only "no Idem" --profile /tmp/intake.cpuprofile
//                                               also a CPU profile of this process during the service's
//                                               segments only (read it with scripts/bench/profile-summary.ts)
//   npm run bench:intake -- --only "no Idem" --statements
//                                               also PostgreSQL's time per request, statement by statement
//                                               (pg_stat_statements, the service's segments only)
//   npm run bench:intake -- --rows 1000000      flat cost: the same reads and writes on a database of
//                                               10 000 rows against one of N rows, alternating
//   npm run bench:intake -- --db-connections    also the most connections the API's pool (integrator-api)
//                                               held open and busy at once (scripts/bench/connections.ts)
//   npm run bench:intake -- --tracing           with OpenTelemetry tracing on, exporting to a local sink in
//                                               another process (scripts/bench/tracing.ts; the floor, a bare
//                                               express + pg endpoint, is traced too)
//   npm run bench:intake -- --memory            the API's memory under Node's defaults: the API in its own
//                                               process as npm run start:api runs it, its resident set
//                                               after N and after 2N requests of the mix (--requests N,
//                                               default 50 000, at least 25 000) and a flood of large
//                                               batches load shedding must hold (scripts/bench/memory.ts)
//   npm run bench:intake -- --callbacks         instead, another tenant's reads under a partner-callback
//                                               flood (scripts/bench/callbacks.ts)
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { createApp } from "../../http/app.ts";
import { buildServices, migrateAll } from "../../app/services.ts";
import { createLogger } from "../../foundation/logger.ts";
import { ReplayMemory } from "../../foundation/replay-memory.ts";
import { loadConfig, type Config } from "../../foundation/config.ts";
import { createDatabase, createDatabaseOnServer, dropDatabaseOnServer } from "../../db/database.ts";
import { createTenant } from "../../db/principals.ts";
import { entitleTenant, insertPartner } from "../../db/partners.ts";
import { handlers } from "../../handlers/index.ts";
import { throwawayPostgres, withDatabase } from "../throwaway-postgres.ts";
import {
  fixed,
  flags,
  listFlag,
  log,
  machine,
  mean,
  median,
  met,
  numberFlag,
  revision,
  runLoad,
  uptime,
  type LoadFigures,
} from "./common.ts";
import { memoryUnderDefaults } from "./memory.ts";
import { BATCH_BODY, SUBMIT_BODY } from "./bodies.ts";
import { listen, startIntakeFloor, type Listening } from "./floor.ts";
import { seedTenantRows } from "./seed.ts";
import type { Scenario } from "./load.ts";
import { STATEMENT_SETTINGS, statementProfile, type StatementProfile } from "./statements.ts";
import { cpuProfiler } from "./profile.ts";
import { cpuMeter, cpuText, meanCpu, type CpuPerOperation } from "./cpu.ts";
import { tracingIsOn } from "../../foundation/tracing.ts";
import { sampleConnections } from "./connections.ts";
import { callbacksBenchmark } from "./callbacks.ts";

const options = flags();
const DURATION = numberFlag(options, "duration", 3);
const ROUNDS = numberFlag(options, "rounds", 2);
const CONNECTIONS = listFlag(options, "connections", [8, 32]);
const ROWS = options.has("rows") ? numberFlag(options, "rows", 1_000_000) : undefined;
const SMALL_ROWS = 10_000;
const ONLY = options.get("only");
const PROFILE = options.get("profile");
const STATEMENTS = options.has("statements");
const TRACING = options.has("tracing");
const MEMORY = options.has("memory");
const CONNECTION_PEAKS = options.has("db-connections");

interface Figures extends LoadFigures {
  /** CPU per request over the segment (scripts/bench/cpu.ts). */
  cpu?: CpuPerOperation;
}

async function load(scenario: Scenario, connections: number, duration: number): Promise<Figures> {
  // The throwaway PostgreSQL this run started (below): its processes' CPU time is counted too.
  const cpuPer = cpuMeter(postgres.databaseDir);
  const figures = await runLoad({ ...scenario, connections, duration });
  return { ...figures, cpu: cpuPer(figures.total) };
}

const single = SUBMIT_BODY;
const batch = BATCH_BODY;

const BENCH_PARTNER = "bench-partner";
const partnerSwitch = JSON.stringify({ target_partner_key: BENCH_PARTNER, context_values: { member_id: "m-1" } });

interface Api {
  url: string;
  /** The same service with no replay memory (API_IDEMPOTENCY_MEMORY_MB=0): every replay is a database look-up. */
  urlWithoutMemory: string;
  auth: Record<string, string>;
  config: Config;
  tenantId: string;
  subject: string;
  db: ReturnType<typeof createDatabase>;
  close(): Promise<void>;
}

/** The application on its own database, with a token for one tenant's client_admin. */
async function startApi(databaseUrl: string): Promise<Api> {
  // One principal sends every request: lift its rate limit (600 a minute by default) and load shedding,
  // unless the environment sets them.
  const config = loadConfig({
    RATE_LIMIT_PER_MINUTE: "1000000",
    // The floor sheds nothing either: a shed request is a fast 503 that would flatter the figures.
    LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
    LOAD_SHED_DB_PENDING_ACQUIRES: "0",
    PUBLIC_BASE_URL: "https://integrator.bench.example",
    ...process.env,
    NODE_ENV: "production",
    DATABASE_URL: databaseUrl,
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    LOG_LEVEL: "info",
  });
  const db = createDatabase(databaseUrl, config.dbPoolMax);
  await migrateAll(db, databaseUrl);
  // Logged as in production (one JSON line per request), into /dev/null.
  const services = await buildServices(
    config,
    db,
    createLogger({ level: config.logLevel, destination: pino.destination({ dest: "/dev/null", sync: false }) }),
  );
  const tenant = await createTenant(db, "Bench tenant");
  // A partner the tenant may switch to: the switch scenarios record a routed decision with a signed assertion.
  await insertPartner(db, {
    partnerKey: BENCH_PARTNER,
    name: "Bench partner",
    launchUrl: "https://partner.bench.example/launch",
    contextKeys: ["member_id"],
    callbackSecretEncrypted: services.secretBox.seal(randomBytes(32).toString("hex")),
  });
  await entitleTenant(db, tenant.id, BENCH_PARTNER);
  const subject = "bench";
  const { token } = await services.tokens.issue({
    subject,
    tenantId: tenant.id,
    roles: ["client_admin"],
    expiresInSeconds: 3600,
  });
  const server: Listening = await listen(await createApp(services, { handlers }));
  const withoutMemory: Listening = await listen(
    await createApp({ ...services, replays: new ReplayMemory(0) }, { handlers }),
  );
  return {
    url: server.url,
    urlWithoutMemory: withoutMemory.url,
    auth: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    config,
    tenantId: tenant.id,
    subject,
    db,
    async close() {
      await server.close();
      await withoutMemory.close();
      await db.destroy();
    },
  };
}

async function createDatabaseNamed(adminUrl: string, name: string): Promise<string> {
  await dropDatabaseOnServer(adminUrl, name);
  await createDatabaseOnServer(adminUrl, name);
  return withDatabase(adminUrl, name);
}

/** One first call, so that the replay scenario replays a finished response. */
async function firstCall(api: Api, key: string): Promise<string> {
  const response = await fetch(`${api.url}/v1/intake/submit`, {
    method: "POST",
    headers: { ...api.auth, "Idempotency-Key": key },
    body: single,
  });
  if (response.status !== 201)
    throw new Error(`the first call with ${key} answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

interface Pairing {
  name: string;
  connections: number;
  service: Figures[];
  floor: Figures[];
}

/** The median over rounds of service ÷ the floor segment measured just before it: robust to a round the machine's other work swamped. */
const ratioOf = (pairing: Pairing, pick: (f: Figures) => number) =>
  median(pairing.service.map((figures, index) => pick(figures) / pick(pairing.floor[index] as Figures)));

/** A scenario measured against its floor: the service segment and the segment it is compared with. */
interface Contest {
  name: string;
  floor: Scenario;
  service: Scenario;
}

/**
 * Alternates floor and service segment by segment: F S1 F S2 … in each round, each S paired with the F
 * before it. `floorLabel` names the floor in the log lines.
 */
async function alternate(
  contests: Contest[],
  floorLabel: string,
  connections: number[],
  rounds: number,
  statements?: StatementProfile,
): Promise<Pairing[]> {
  const pairings: Pairing[] = [];
  const profiler = PROFILE === undefined ? undefined : await cpuProfiler();
  // Warm-up (not counted): the JIT and the pools, once per scenario.
  for (const scenario of new Set(contests.flatMap((contest) => [contest.floor, contest.service])))
    await load(scenario, 8, 1);
  for (const conns of connections) {
    const mine = contests.map(({ name }) => ({ name, connections: conns, service: [], floor: [] }));
    for (let round = 1; round <= rounds; round++) {
      for (const [index, contest] of contests.entries()) {
        const pairing = mine[index] as Pairing;
        const f = await load(contest.floor, conns, DURATION);
        const since = await statements?.mark();
        await profiler?.resume();
        const s = await load(contest.service, conns, DURATION);
        await profiler?.pause();
        if (since) await statements?.add(contest.name, since, s.total);
        pairing.floor.push(f);
        pairing.service.push(s);
        log(
          `${conns} conns, round ${round}: ${contest.name}: ${fixed(s.requestsPerSecond)} req/s (p50 ${s.p50} p99 ${s.p99}; CPU ms per request ${cpuText(s.cpu)}) against ${floorLabel} ${fixed(f.requestsPerSecond)} req/s (p50 ${f.p50} p99 ${f.p99}; ${cpuText(f.cpu)}): ${fixed(s.requestsPerSecond / f.requestsPerSecond, 2)}`,
        );
      }
    }
    pairings.push(...mine);
  }
  if (profiler && PROFILE !== undefined) {
    await profiler.save(PROFILE);
    log(`CPU profile of the service segments: ${PROFILE}`);
  }
  return pairings;
}

interface Goal {
  /** The figure checked, as text. */
  figure: (p: Pairing) => string;
  ok: (p: Pairing) => boolean;
  text: string;
}

/** A goal on the median over rounds of a figure's ratio against the floor's. */
function ratioGoal(text: string, pick: (f: Figures) => number, holds: (ratio: number) => boolean): Goal {
  return { text, figure: (p) => fixed(ratioOf(p, pick), 2), ok: (p) => holds(ratioOf(p, pick)) };
}

const requestsAtLeast = (share: number) =>
  ratioGoal(
    `≥ ${share} × floor req/s`,
    (f) => f.requestsPerSecond,
    (ratio) => ratio >= share,
  );

const GOALS: Record<string, Goal[]> = {
  "submit, no Idempotency-Key": [
    requestsAtLeast(0.7),
    ratioGoal(
      "p99 ≤ 2 × floor p99",
      (f) => f.p99,
      (ratio) => ratio <= 2,
    ),
  ],
  "submit, fresh Idempotency-Key": [requestsAtLeast(0.45)],
  "submit, replay": [requestsAtLeast(0.8)],
  "batch of 100": [
    {
      text: "p50 ≤ 25 ms",
      figure: (p) => `${fixed(median(p.service.map((f) => f.p50)), 1)} ms`,
      ok: (p) => median(p.service.map((f) => f.p50)) <= 25,
    },
    {
      text: "≥ 20 000 items/s",
      figure: (p) => fixed(mean(p.service.map((f) => f.requestsPerSecond)) * 100),
      ok: (p) => mean(p.service.map((f) => f.requestsPerSecond)) * 100 >= 20_000,
    },
  ],
};

function table(pairings: Pairing[], serviceLabel = "service", floorLabel = "floor"): string[] {
  return [
    `| Connections | Scenario | ${serviceLabel} req/s | ${floorLabel} req/s | ratio | ${serviceLabel} p50 / p99 ms | ${floorLabel} p50 / p99 ms | p99 ratio | non-2xx | ${serviceLabel} CPU ms per request: Node / PostgreSQL / machine | ${floorLabel} CPU ms per request |`,
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...pairings.map((p) => {
      const s = p.service;
      const f = p.floor;
      return `| ${p.connections} | ${p.name} | ${fixed(mean(s.map((x) => x.requestsPerSecond)))} | ${fixed(mean(f.map((x) => x.requestsPerSecond)))} | ${fixed(
        ratioOf(p, (x) => x.requestsPerSecond),
        2,
      )} | ${fixed(mean(s.map((x) => x.p50)), 1)} / ${fixed(mean(s.map((x) => x.p99)), 1)} | ${fixed(mean(f.map((x) => x.p50)), 1)} / ${fixed(mean(f.map((x) => x.p99)), 1)} | ${fixed(
        ratioOf(p, (x) => x.p99),
        2,
      )} | ${s.reduce((n, x) => n + x.non2xx + x.errors, 0)} | ${cpuText(meanCpu(s.map((x) => x.cpu)))} | ${cpuText(meanCpu(f.map((x) => x.cpu)))} |`;
    }),
  ];
}

const CPU_NOTE =
  "CPU ms per request: this process's (it runs the service and the floor, one at a time), the embedded PostgreSQL's processes' and the whole machine's busy time (the load generator and any other work included) over a segment, divided by its requests; means over rounds. With the machine's CPUs saturated, the ratio of requests/s is about the inverse ratio of machine CPU per request.";

async function ratiosAgainstFloor(adminUrl: string): Promise<string[]> {
  const api = await startApi(await createDatabaseNamed(adminUrl, "integrator_bench"));
  const floor = await startIntakeFloor(withDatabase(adminUrl, "integrator_bench"), api.config.dbPoolMax);
  const statements = STATEMENTS ? await statementProfile(withDatabase(adminUrl, "integrator_bench")) : undefined;
  const connections = CONNECTION_PEAKS
    ? await sampleConnections(withDatabase(adminUrl, "integrator_bench"))
    : undefined;
  try {
    await firstCall(api, "bench-replay");
    const scenarios: [string, Scenario][] = [
      [
        "submit, no Idempotency-Key",
        { url: `${api.url}/v1/intake/submit`, method: "POST", headers: api.auth, body: single },
      ],
      [
        "submit, fresh Idempotency-Key",
        {
          url: `${api.url}/v1/intake/submit`,
          method: "POST",
          headers: api.auth,
          body: single,
          uniqueIdempotencyKey: true,
        },
      ],
      [
        "submit, replay",
        {
          url: `${api.url}/v1/intake/submit`,
          method: "POST",
          headers: { ...api.auth, "Idempotency-Key": "bench-replay" },
          body: single,
        },
      ],
      // No goal of its own: a replay another replica has not seen yet (or with the memory off) reads the key.
      [
        "submit, replay from the database (no replay memory)",
        {
          url: `${api.urlWithoutMemory}/v1/intake/submit`,
          method: "POST",
          headers: { ...api.auth, "Idempotency-Key": "bench-replay" },
          body: single,
        },
      ],
      ["batch of 100", { url: `${api.url}/v1/intake/batch`, method: "POST", headers: api.auth, body: batch }],
      // No goal of their own: partner switch writes a decision and its audit action like a submit does.
      [
        "partner switch, no Idempotency-Key",
        { url: `${api.url}/v1/partner-switch`, method: "POST", headers: api.auth, body: partnerSwitch },
      ],
      [
        "partner switch, fresh Idempotency-Key",
        {
          url: `${api.url}/v1/partner-switch`,
          method: "POST",
          headers: api.auth,
          body: partnerSwitch,
          uniqueIdempotencyKey: true,
        },
      ],
    ];
    const selected = ONLY ? scenarios.filter(([name]) => name.includes(ONLY)) : scenarios;
    const floorScenario: Scenario = {
      url: `${floor.url}/insert`,
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: single,
    };
    const pairings = await alternate(
      selected.map(([name, service]) => ({ name, floor: floorScenario, service })),
      "floor",
      CONNECTIONS,
      ROUNDS,
      statements,
    );
    const goals = pairings.flatMap((p) =>
      (GOALS[p.name] ?? []).map(
        (goal) => `| ${p.connections} | ${p.name} | ${goal.text} | ${goal.figure(p)} | ${met(goal.ok(p))} |`,
      ),
    );
    return [
      `Pool ${api.config.dbPoolMax} connections each; ${ROUNDS} round(s) of ${DURATION} s segments, floor and service alternating; req/s and latencies are means over rounds, each ratio the median over rounds of a segment against the floor segment just before it.`,
      CPU_NOTE,
      "",
      ...table(pairings),
      "",
      "| Connections | Scenario | Goal | Measured | |",
      "|---:|---|---|---:|---|",
      ...goals,
      ...(statements ? selected.flatMap(([name]) => ["", ...statements.table(name)]) : []),
      ...(connections
        ? [
            "",
            `The API's pool is integrator-api (DB_POOL_MAX ${api.config.dbPoolMax}), the floor's unnamed.`,
            ...connections.table(),
          ]
        : []),
    ];
  } finally {
    await connections?.close();
    await statements?.close();
    await floor.close();
    await api.close();
  }
}

async function flatCost(adminUrl: string, rows: number): Promise<string[]> {
  const small = await startApi(await createDatabaseNamed(adminUrl, "integrator_bench_small"));
  const large = await startApi(await createDatabaseNamed(adminUrl, "integrator_bench_large"));
  try {
    for (const [api, count] of [
      [small, SMALL_ROWS],
      [large, rows],
    ] as const) {
      const started = performance.now();
      await seedTenantRows(api.db, api.tenantId, api.subject, count, (done) => log(`seeded ${done} of ${count} rows`));
      log(`seeding ${count} rows of each kind took ${fixed((performance.now() - started) / 1000)} s`);
    }
    const scenariosOf = async (api: Api): Promise<[string, Scenario][]> => {
      const submissionId = await firstCall(api, "bench-replay");
      return [
        [
          "submit, no Idempotency-Key",
          { url: `${api.url}/v1/intake/submit`, method: "POST", headers: api.auth, body: single },
        ],
        [
          "get-submission",
          { url: `${api.url}/v1/intake/submissions/${submissionId}`, method: "GET", headers: api.auth },
        ],
        // From the database, which is what grows (a replay from memory does not look at the rows at all).
        [
          "submit, replay from the database",
          {
            url: `${api.urlWithoutMemory}/v1/intake/submit`,
            method: "POST",
            headers: { ...api.auth, "Idempotency-Key": "bench-replay" },
            body: single,
          },
        ],
        [
          "deliveries page (limit 50)",
          { url: `${api.url}/v1/webhooks/deliveries?limit=50`, method: "GET", headers: api.auth },
        ],
      ];
    };
    const smallScenarios = await scenariosOf(small);
    const largeScenarios = await scenariosOf(large);
    const connections = CONNECTIONS[0] ?? 8;
    const label = rows.toLocaleString("en");
    // The 10 000-row database is the floor of the one with `rows`.
    const pairings = await alternate(
      smallScenarios.map(([name, floor], index) => ({
        name,
        floor,
        service: (largeScenarios[index] as [string, Scenario])[1],
      })),
      `${SMALL_ROWS.toLocaleString("en")} rows`,
      [connections],
      ROUNDS,
    );
    return [
      `Flat cost: one tenant with ${label} rows of each kind (submissions, items, audit actions, remembered keys, deliveries) against one with ${SMALL_ROWS.toLocaleString("en")}, two databases in one PostgreSQL, ${connections} connections, ${ROUNDS} round(s) of ${DURATION} s, alternating. Goal: within 20 % (ratio ≥ 0.8).`,
      CPU_NOTE,
      "",
      ...table(pairings, `${label} rows`, `${SMALL_ROWS.toLocaleString("en")} rows`),
      "",
      "| Scenario | ratio | |",
      "|---|---:|---|",
      ...pairings.map((p) => {
        const ratio = ratioOf(p, (f) => f.requestsPerSecond);
        return `| ${p.name} | ${fixed(ratio, 2)} | ${met(ratio >= 0.8)} |`;
      }),
    ];
  } finally {
    await small.close();
    await large.close();
  }
}

if (options.has("callbacks")) {
  await callbacksBenchmark();
  process.exit(0);
}

// Tracing has to start before express, pg and http are loaded: the run goes on in a process that starts it first.
if (TRACING && !tracingIsOn()) {
  const traced = spawn(
    process.execPath,
    ["--import", new URL("./tracing.ts", import.meta.url).href, ...process.argv.slice(1)],
    { stdio: "inherit" },
  );
  process.exit(await new Promise<number>((resolve) => traced.once("exit", (code) => resolve(code ?? 1))));
}

const before = uptime();
// Taken as the run starts: the code it measures.
const run = revision();
const postgres = await throwawayPostgres("integrator-bench", STATEMENTS ? STATEMENT_SETTINGS : undefined);
let lines: string[];
try {
  if (MEMORY) {
    // By 25 000 requests the replay memory and V8's heap are still filling; by 50 000 they have levelled off.
    const requests = numberFlag(options, "requests", 50_000);
    if (requests < 25_000) throw new Error("--requests: N is at least 25000");
    lines = await memoryUnderDefaults(await createDatabaseNamed(postgres.adminUrl, "integrator_bench_memory"), {
      requests,
      rounds: numberFlag(options, "rounds", 4),
      connections: CONNECTIONS.length === 1 ? (CONNECTIONS[0] as number) : 32,
    });
  } else if (ROWS === undefined) lines = await ratiosAgainstFloor(postgres.adminUrl);
  else lines = await flatCost(postgres.adminUrl, ROWS);
} finally {
  await postgres.stop();
}
const tracing = TRACING ? await (await import("./tracing.ts")).finishTracing() : undefined;
process.stdout.write(
  [
    `Run: ${run}.`,
    `Machine: ${machine()}; PostgreSQL embedded; request logs at info to /dev/null.`,
    tracing
      ? `Tracing on (sampler ${tracing.sampler}), exported over OTLP/HTTP (${tracing.protocol}) to a sink in another process, which received ${tracing.requests} exports, ${fixed(tracing.bytes / 2 ** 20, 1)} MiB.`
      : "Tracing off.",
    `Load before: ${before}`,
    `Load after:  ${uptime()}`,
    "",
    ...lines,
    "",
  ].join("\n"),
);
