// Replays of finished Idempotency-Key calls are answered from the API process's memory
// (foundation/replay-memory.ts): shown from outside by holding an ACCESS EXCLUSIVE lock on
// integrator.idempotency_keys, which stops any statement that reads the keys until it is released. A
// replay answered while the lock is held touched no key in the database.
import t, { type Test } from "tap";
import pg from "pg";
import {
  createTestTenant,
  startReplica,
  startTestServer,
  type TestServer,
  type TestTenant,
} from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";
import { waitFor } from "../helpers/wait.ts";

const pdf = { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf" };

const submit = (server: TestServer, tenant: TestTenant, key: string, json: unknown) =>
  server.request("/v1/intake/submit", {
    method: "POST",
    token: tenant.token,
    json,
    headers: { "Idempotency-Key": key },
  });

/** Holds ACCESS EXCLUSIVE on integrator.idempotency_keys until `release()`. */
async function lockKeys(t: Test, databaseUrl: string): Promise<{ release(): Promise<void>; pid: number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await client.query("commit");
    await client.end();
  };
  t.teardown(release);
  await client.query("begin");
  await client.query("lock table integrator.idempotency_keys in access exclusive mode");
  const { rows } = await client.query<{ pid: number }>("select pg_backend_pid() as pid");
  return { release, pid: rows[0]?.pid as number };
}

/** Fails the test instead of hanging when a request waits on the lock it should never have needed. */
function within<T>(promise: Promise<T>, what: string, ms = 15_000): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms).unref(),
    ),
  ]);
}

t.test("a replay is answered from memory: byte-identical, while the keys table is locked", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const first = await submit(server, tenant, "memory-1", pdf);
  t.equal(first.status, 201);
  const original = await first.text();

  const lock = await lockKeys(t, server.databaseUrl);
  const again = await within(submit(server, tenant, "memory-1", pdf), "the replay");
  t.equal(again.status, 201);
  t.equal(again.headers.get("idempotent-replayed"), "true");
  t.equal(await again.text(), original, "the bytes of the first answer");

  const other = await within(submit(server, tenant, "memory-1", { ...pdf, file_size: 7 }), "the mismatch");
  t.equal(other.status, 409);
  t.equal(
    ((await other.json()) as { error: { code: string } }).error.code,
    "IDEMPOTENCY_KEY_MISMATCH",
    "another body: mismatch, from memory too",
  );
  await lock.release();

  const count = await server.services
    .db("integrator.intake_submissions")
    .where({ tenant_id: tenant.tenantId })
    .count<{ count: string }[]>("* as count");
  t.equal(Number(count[0]?.count), 1, "one submission in all");
});

t.test("another process learns a finished response from the database once, then answers from memory", async (t) => {
  const writer = await startTestServer(t);
  const reader = await startReplica(t, writer);
  const tenant = await createTestTenant(writer.services);
  const first = await submit(writer, tenant, "memory-2", pdf);
  t.equal(first.status, 201);
  const original = await first.text();

  const looked = await submit(reader, tenant, "memory-2", pdf);
  t.equal(looked.headers.get("idempotent-replayed"), "true", "the reader's first replay, from the database");
  t.equal(await looked.text(), original);

  const lock = await lockKeys(t, writer.databaseUrl);
  const again = await within(submit(reader, tenant, "memory-2", pdf), "the reader's second replay");
  t.equal(again.headers.get("idempotent-replayed"), "true");
  t.equal(await again.text(), original, "from the reader's memory");
  await lock.release();
});

t.test("a partner switch replay is answered from memory, before any assertion is signed", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
  const switchTo = () =>
    server.request("/v1/partner-switch", {
      method: "POST",
      token: tenant.token,
      json: { target_partner_key: partner.partnerKey },
      headers: { "Idempotency-Key": "switch-memory" },
    });
  const first = await switchTo();
  t.equal(first.status, 200);
  const original = await first.text();

  const lock = await lockKeys(t, server.databaseUrl);
  const again = await within(switchTo(), "the switch replay");
  t.equal(again.status, 200);
  t.equal(again.headers.get("idempotent-replayed"), "true");
  t.equal(await again.text(), original);
  await lock.release();
});

t.test("API_IDEMPOTENCY_MEMORY_MB=0 keeps nothing: the replay waits for the keys table", async (t) => {
  const server = await startTestServer(t, { env: { API_IDEMPOTENCY_MEMORY_MB: "0" } });
  const tenant = await createTestTenant(server.services);
  const first = await submit(server, tenant, "memory-off", pdf);
  t.equal(first.status, 201);
  const original = await first.text();

  const lock = await lockKeys(t, server.databaseUrl);
  let answered = false;
  const again = submit(server, tenant, "memory-off", pdf).then((res) => {
    answered = true;
    return res;
  });
  // The replay's statement is queued behind the lock (a backend of this database waits for it).
  const waiting = await waitFor(
    async () =>
      Number(
        (
          await server.services.db.raw<{ rows: { waiting: number }[] }>(
            "select count(*)::int as waiting from pg_stat_activity where datname = current_database() and ? = any (pg_blocking_pids(pid))",
            [lock.pid],
          )
        ).rows[0]?.waiting,
      ),
    (count) => count > 0,
    { seconds: 15, intervalMs: 50 },
  );
  t.ok(waiting > 0, "the replay waits on the locked table");
  t.notOk(answered, "and has not been answered");
  await lock.release();
  const res = await within(again, "the replay after the lock");
  t.equal(res.headers.get("idempotent-replayed"), "true");
  t.equal(await res.text(), original);
});
