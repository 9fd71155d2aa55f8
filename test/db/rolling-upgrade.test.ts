// A rolling upgrade under traffic, with real processes on one database: the previous release
// (test/helpers/previous-release.ts, its own checkout and packages) migrates a new database and serves, its
// API and worker; then this release's API starts, migrating the same database, and serves beside the old
// one while the old worker alone delivers on the new schema; then this release's worker joins, and the
// old worker is stopped, as a rollout replaces replicas. Traffic runs through whichever APIs are up the
// whole time: submits with and without an Idempotency-Key (replayed through the other API), batches,
// subscriptions made and read across versions, and list and get reads. No answer is a 5xx or otherwise
// unexpected, and every delivery reaches its HTTPS receiver exactly once and is recorded delivered.
import path from "node:path";
import { randomBytes } from "node:crypto";
import t from "tap";
import { createDatabase } from "../../db/database.ts";
import { runAdminCli } from "../helpers/admin-cli.ts";
import { createEmptyDatabase } from "../helpers/database.ts";
import { startReceiver, type ReceivedRequest } from "../helpers/https-receiver.ts";
import { startMainProcess, type MainProcess } from "../helpers/main-process.ts";
import { PREVIOUS_RELEASE, previousReleaseCheckout } from "../helpers/previous-release.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitFor } from "../helpers/wait.ts";
import { webhookRequestErrors } from "../helpers/webhook-schemas.ts";
import { testCa, webhookEnv } from "../helpers/webhooks.ts";

/** Deliveries each phase must see arrive before the next step of the rollout. */
const PER_PHASE = 20;

/** One API process the traffic goes through. */
interface Api {
  name: "previous" | "new";
  port: number;
  token: string;
}

/** An answer that was not what the request should get. */
interface Unexpected {
  api: Api["name"];
  request: string;
  status: number;
  body: string;
}

t.test(
  `the previous release (${PREVIOUS_RELEASE.slice(0, 7)}) serves and delivers beside this one during a rolling upgrade`,
  async (t) => {
    const begun = performance.now();
    const previous = previousReleaseCheckout();
    const ca = testCa(t);
    const url = await createEmptyDatabase(t);
    const env: Record<string, string> = {
      NODE_ENV: "test",
      DATABASE_URL: url,
      DATA_DIR: tempDir(t, "integrator-upgrade-"),
      ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      LOG_LEVEL: "info",
      PORT: "0",
      DB_POOL_MAX: "4",
      RATE_LIMIT_PER_MINUTE: "100000",
      RATE_LIMIT_ANON_PER_MINUTE: "100000",
      LOAD_SHED_DB_PENDING_ACQUIRES: "0",
      WEBHOOK_MANUAL_SENDS_PER_MINUTE: "100000",
      SHUTDOWN_TIMEOUT_MS: "30000",
      // Six processes start here: they share the test run's cache of compiled modules (scripts/test.ts).
      ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
      ...webhookEnv(ca),
    };
    const receiver = await startReceiver(ca, () => ({ status: 204 }), {
      onRequest: (request) => {
        const problems = webhookRequestErrors(request);
        if (problems.length > 0)
          t.fail(`the delivery to ${request.path} does not match the document's webhooks section`, { problems });
      },
    });
    t.teardown(() => receiver.close());
    const db = createDatabase(url, 2);
    t.teardown(() => db.destroy());

    // The previous release migrates the new database to its schema as it starts, and serves. It answers as
    // deployed, without checking its answers against its own document: it shows what this release stores as
    // stored, and an addition this release makes (a new envelope field of a test event, say) is one its
    // document lacks, as every additive change is for clients of the previous document.
    const previousMain = path.join(previous, "app", "main.ts");
    const previousEnv = { ...env, VALIDATE_RESPONSES: "false" };
    const processes: { name: string; process: MainProcess }[] = [];
    const [previousApi, previousWorker] = await Promise.all([
      startMainProcess(t, previousEnv, { main: previousMain, args: ["--role=api"] }),
      startMainProcess(t, previousEnv, { main: previousMain, args: ["--role=worker"] }),
    ]);
    processes.push(
      { name: "previous API", process: previousApi },
      { name: "previous worker", process: previousWorker },
    );

    // A tenant and an API client, made by the previous release's own admin CLI before the upgrade.
    const admin = async (args: string[]) => {
      const run = await runAdminCli({ env: { ...env, LOG_LEVEL: "silent" } }, args, { root: previous });
      if (run.code !== 0) throw new Error(`admin ${args[0]} exited ${run.code}: ${run.stdout}${run.stderr}`);
      return JSON.parse(run.stdout) as Record<string, string>;
    };
    const tenant = await admin(["tenant:create", "--name", "Upgrade tenant"]);
    const client = await admin(["client:create", "--tenant", String(tenant.id), "--roles", "client_admin"]);
    const tokenFrom = async (port: number) => {
      const res = await fetch(`http://127.0.0.1:${port}/token`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "client_credentials",
          client_id: String(client.client_id),
          client_secret: String(client.client_secret),
        }).toString(),
      });
      if (res.status !== 200) throw new Error(`/token answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { access_token: string }).access_token;
    };

    const apis: Api[] = [{ name: "previous", port: previousApi.port, token: await tokenFrom(previousApi.port) }];
    /** Answers that were not the one expected (a 5xx, any other status, a replay that was not the first answer). */
    const unexpected: Unexpected[] = [];
    const answered = new Map<string, number>();
    const call = async (
      api: Api,
      request: string,
      expected: number,
      pathname: string,
      init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
    ): Promise<{ status: number; text: string; headers: Headers }> => {
      const answer = await fetch(`http://127.0.0.1:${api.port}${pathname}`, {
        method: init.method ?? "GET",
        headers: {
          Authorization: `Bearer ${api.token}`,
          ...(init.json === undefined ? {} : { "Content-Type": "application/json" }),
          ...init.headers,
        },
        ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
      }).then(
        async (res) => ({ status: res.status, text: await res.text(), headers: res.headers }),
        // No answer at all (a refused or reset connection) counts as status 0.
        (error: unknown) => ({ status: 0, text: String(error), headers: new Headers() }),
      );
      const tally = `${api.name} ${request} ${answer.status}`;
      answered.set(tally, (answered.get(tally) ?? 0) + 1);
      if (answer.status !== expected)
        unexpected.push({ api: api.name, request, status: answer.status, body: answer.text.slice(0, 500) });
      return answer;
    };

    // Subscriptions made before the upgrade: every submission's event is delivered to each of them.
    const subscribe = async (api: Api, pathname: string, events = ["*"]) => {
      const made = await call(api, "create subscription", 201, "/v1/webhooks/subscriptions", {
        method: "POST",
        json: { url: receiver.url(pathname), events, description: `made through the ${api.name} API` },
      });
      if (made.status !== 201) return undefined;
      return (JSON.parse(made.text) as { id: string }).id;
    };
    const [previousEntry] = apis as [Api];
    const standing = [await subscribe(previousEntry, "/standing/1"), await subscribe(previousEntry, "/standing/2")];
    t.notOk(standing.includes(undefined), "the standing subscriptions are made");

    // Traffic: one loop per API, through each API from its start until the end.
    const submissions = new Map<string, Api["name"]>();
    let running = true;
    // A failure ends the test early: the loops stop then too.
    t.teardown(() => {
      running = false;
    });
    const other = (api: Api) => apis.find((candidate) => candidate !== api) ?? api;
    /** When this release's API was up (not yet: infinity), and the rounds each API began after that and finished. */
    let upgradedAt = Number.POSITIVE_INFINITY;
    const roundsAfterUpgrade = { previous: 0, new: 0 };
    const traffic = async (api: Api) => {
      for (let round = 0; running; round++) {
        const startedAt = performance.now();
        const item = (n: number) => ({
          filename: `claim-${round}-${n}.pdf`,
          file_size: 1000 + n,
          mime_type: "application/pdf",
        });
        const submit = await call(api, "submit", 201, "/v1/intake/submit", {
          method: "POST",
          json: { ...item(0), external_reference: `${api.name}-${round}`, module: "claims", tier: "standard" },
        });
        if (submit.status === 201) submissions.set((JSON.parse(submit.text) as { id: string }).id, api.name);

        // Under an Idempotency-Key, then the same call again through the other API: the first answer, replayed.
        const key = `${api.name}-${round}-${randomBytes(4).toString("hex")}`;
        const keyed = { method: "POST", json: item(1), headers: { "Idempotency-Key": key } };
        const first = await call(api, "submit with a key", 201, "/v1/intake/submit", keyed);
        if (first.status === 201) {
          submissions.set((JSON.parse(first.text) as { id: string }).id, api.name);
          const again = await call(other(api), "submit with a key, replayed", 201, "/v1/intake/submit", keyed);
          if (again.headers.get("idempotent-replayed") !== "true" || again.text !== first.text)
            unexpected.push({
              api: other(api).name,
              request: "submit with a key, replayed",
              status: again.status,
              body: `not the first answer replayed: ${again.text.slice(0, 300)} against ${first.text.slice(0, 300)}`,
            });
        }

        const batch = await call(api, "batch", 201, "/v1/intake/batch", {
          method: "POST",
          json: { items: [item(2), item(3)], external_reference: `${api.name}-batch-${round}` },
          headers: round % 2 === 0 ? { "Idempotency-Key": `${key}-batch` } : {},
        });
        if (batch.status === 201) submissions.set((JSON.parse(batch.text) as { id: string }).id, api.name);

        // Reads of what either version wrote.
        const written = [...submissions.keys()];
        const theirs = written.findLast((id) => submissions.get(id) !== api.name) ?? written.at(-1);
        if (theirs) await call(api, "get submission", 200, `/v1/intake/submissions/${theirs}`);
        await call(api, "list submissions", 200, "/v1/intake/submissions?limit=5");
        await call(api, "list subscriptions", 200, "/v1/webhooks/subscriptions");
        const listed = await call(api, "list deliveries", 200, "/v1/webhooks/deliveries?status=delivered&limit=5");
        // A test event and a redelivery: single deliveries, each in a job of its own.
        await call(api, "test event", 202, `/v1/webhooks/subscriptions/${String(standing[round % 2])}/test`, {
          method: "POST",
        });
        const delivered =
          listed.status === 200 ? (JSON.parse(listed.text) as { deliveries: { id: string }[] }) : undefined;
        const resend = delivered?.deliveries.at(round % 5);
        if (resend)
          await call(api, "redelivery", 202, `/v1/webhooks/deliveries/${resend.id}/redeliver`, { method: "POST" });
        await call(api, "list events", 200, "/v1/events?limit=5");
        // A subscription to every kind in the first round (the previous API's is made before the upgrade,
        // the new API's after it), else to a kind nothing here emits: a write each round, read back
        // through the other API, that adds no deliveries.
        const id = await subscribe(api, `/${api.name}/${round}`, round === 0 ? ["*"] : ["document.completed"]);
        if (id) await call(other(api), "get subscription", 200, `/v1/webhooks/subscriptions/${id}`);
        if (startedAt > upgradedAt) roundsAfterUpgrade[api.name]++;
      }
    };
    const loops = [traffic(previousEntry)];

    // The deliveries that arrived after a moment, once there are enough (and `also` holds of them); a process
    // that exits ends the wait.
    const submittedThrough = (request: ReceivedRequest) => {
      const body = JSON.parse(request.rawBody.toString("utf8")) as { data?: { submission_id?: string } };
      return submissions.get(body.data?.submission_id ?? "");
    };
    const phase = async (what: string, since: number, also: (arrived: ReceivedRequest[]) => boolean = () => true) => {
      const enough = (arrived: ReceivedRequest[]) => arrived.length >= PER_PHASE && also(arrived);
      const arrived = await waitFor(
        async () => {
          for (const { name, process } of processes)
            if (process.child.exitCode !== null || process.child.signalCode !== null)
              throw new Error(
                `the ${name} exited (${process.child.exitCode ?? process.child.signalCode}):\n${process.stdout().slice(-4000)}`,
              );
          return receiver.received.filter((request) => request.receivedAt > since);
        },
        enough,
        { seconds: 30 },
      );
      t.ok(
        enough(arrived),
        `${what}: ${arrived.length} deliveries arrive (${((performance.now() - begun) / 1000).toFixed(1)} s into the test)`,
      );
      return arrived;
    };
    await phase("the previous release alone", 0);

    // This release's API migrates the database as it starts; the previous release serves meanwhile.
    const newApi = await startMainProcess(t, env, { args: ["--role=api"] });
    const migrated = performance.now();
    upgradedAt = migrated;
    processes.push({ name: "new API", process: newApi });
    const newApiEntry: Api = { name: "new", port: newApi.port, token: await tokenFrom(newApi.port) };
    apis.push(newApiEntry);
    loops.push(traffic(newApiEntry));
    // The previous worker alone delivers on the new schema, the events this release's API writes among them.
    await phase("the new schema, the previous worker alone delivering", migrated, (arrived) =>
      arrived.some((request) => submittedThrough(request) === "new"),
    );

    const newWorker = await startMainProcess(t, env, { args: ["--role=worker"] });
    processes.push({ name: "new worker", process: newWorker });
    await phase("both workers", performance.now());

    // The rollout replaces the previous worker: it stops as a supervisor stops it.
    previousWorker.child.kill("SIGTERM");
    const previousWorkerExit = await previousWorker.exited;
    processes.splice(
      processes.findIndex(({ process }) => process === previousWorker),
      1,
    );
    t.same(previousWorkerExit, { code: 0, signal: null }, "the previous worker stops cleanly");
    // The new worker alone delivers the previous API's events, while both APIs keep serving.
    await phase(
      "the new worker alone",
      performance.now(),
      (arrived) =>
        arrived.some((request) => submittedThrough(request) === "previous") &&
        roundsAfterUpgrade.previous >= 2 &&
        roundsAfterUpgrade.new >= 2,
    );
    running = false;
    await Promise.all(loops);

    // Every delivery is final, delivered, on one attempt, and arrived exactly once.
    const deliveries = () =>
      db("integrator.webhook_deliveries").where({ tenant_id: tenant.id }).select<
        {
          id: string;
          subscription_id: string;
          origin: string;
          status: string;
          attempts: number;
          submission_id: string | null;
        }[]
      >("id", "subscription_id", "origin", "status", "attempts", db.raw("payload->'data'->>'submission_id' as submission_id"));
    const final = await waitFor(deliveries, (rows) => rows.every((row) => row.status !== "pending"), { seconds: 60 });
    const sends = new Map<string, ReceivedRequest[]>();
    for (const request of receiver.received) {
      const id = String(request.headers["x-service-review-delivery"]);
      sends.set(id, [...(sends.get(id) ?? []), request]);
    }
    const attemptRows = await db("integrator.webhook_delivery_attempts")
      .where({ tenant_id: tenant.id })
      .select<{ delivery_id: string; number: number }[]>("delivery_id", "number");
    const recordedAttempts = new Map<string, number>();
    for (const row of attemptRows)
      recordedAttempts.set(row.delivery_id, (recordedAttempts.get(row.delivery_id) ?? 0) + 1);

    const serverErrors = unexpected.filter((answer) => answer.status >= 500);
    t.equal(serverErrors.length, 0, "no API answered 5xx", { first: serverErrors.slice(0, 5) });
    t.equal(unexpected.length, 0, "every answer is the one expected", {
      first: unexpected.slice(0, 5),
      answered: Object.fromEntries(answered),
    });
    const unrecorded = final.filter(
      (row) => row.status !== "delivered" || row.attempts !== 1 || recordedAttempts.get(row.id) !== 1,
    );
    t.equal(unrecorded.length, 0, `each of the ${final.length} deliveries is recorded delivered, on one attempt`, {
      first: unrecorded.slice(0, 5).map((row) => ({ ...row, recorded: recordedAttempts.get(row.id) ?? 0 })),
    });
    const notOnce = final.filter((row) => sends.get(row.id)?.length !== 1);
    t.equal(notOnce.length, 0, "each delivery reached its receiver exactly once", {
      first: notOnce.slice(0, 5).map((row) => ({ id: row.id, sends: sends.get(row.id)?.length ?? 0 })),
      sentTwiceOrMore: notOnce.filter((row) => (sends.get(row.id)?.length ?? 0) > 1).length,
      neverArrived: notOnce.filter((row) => !sends.has(row.id)).length,
    });
    t.equal(sends.size, final.length, "and nothing else reached it");

    // Nothing acknowledged was lost: each submission has its delivery to each standing subscription.
    const standingDeliveries = new Map<string, number>();
    for (const row of final)
      if (row.origin === "event" && row.submission_id && standing.includes(row.subscription_id))
        standingDeliveries.set(row.submission_id, (standingDeliveries.get(row.submission_id) ?? 0) + 1);
    const lost = [...submissions.keys()].filter((id) => standingDeliveries.get(id) !== standing.length);
    t.equal(
      lost.length,
      0,
      `each of the ${submissions.size} submissions made a delivery to each standing subscription`,
      {
        first: lost
          .slice(0, 5)
          .map((id) => ({ id, through: submissions.get(id), deliveries: standingDeliveries.get(id) ?? 0 })),
      },
    );
    for (const name of ["previous", "new"] as const)
      t.ok([...submissions.values()].filter((api) => api === name).length > 0, `the ${name} API took submissions`);

    // No process logged an error (a statement that failed, a job that threw).
    for (const { name, process } of [
      { name: "previous API", process: previousApi },
      { name: "previous worker", process: previousWorker },
      { name: "new API", process: newApi },
      { name: "new worker", process: newWorker },
    ]) {
      const errors = process.logLines().filter((line) => line.level === "error" || line.level === "fatal");
      t.equal(errors.length, 0, `the ${name} logged no error`, {
        first: errors.slice(0, 3).map((line) => JSON.stringify({ ...line, time: undefined }).slice(0, 1500)),
      });
    }
  },
);
