// The password grant is throttled per username, for every replica alike (counts in PostgreSQL), and
// secret checks (scrypt) run a bounded number at a time, so a flood of guesses neither gets faster by
// spreading over addresses or replicas nor holds the CPU.
import { randomUUID } from "node:crypto";
import t from "tap";
import { createTestTenant, createTestUser, startReplica, startTestServer, type TestServer } from "../helpers/server.ts";
import { registerUser } from "../../handlers/auth/principals.ts";

const grant = (server: TestServer, username: string, password: string) =>
  server.request("/token", {
    method: "POST",
    body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
  });

const BACKOFF = { AUTH_LOGIN_FREE_FAILURES: "3", AUTH_LOGIN_BACKOFF_BASE_SECONDS: "30" };

t.test(
  "after AUTH_LOGIN_FREE_FAILURES failures a username is locked on every replica, even for the right password",
  async (t) => {
    const first = await startTestServer(t, { env: BACKOFF });
    const second = await startReplica(t, first, BACKOFF);
    const tenant = await createTestTenant(first.services);
    const user = await createTestUser(first.services, tenant.tenantId);
    const bystander = await createTestUser(first.services, tenant.tenantId);
    const replicas = [first, second];
    for (let i = 0; i < 4; i++) {
      const res = await grant(replicas[i % 2] as TestServer, user.username, "wrong-password");
      t.equal(res.status, 400, `failure ${i + 1} is invalid_grant`);
      t.equal((await res.json()).error, "invalid_grant");
    }
    for (const replica of replicas) {
      const locked = await grant(replica, user.username, user.password);
      t.equal(locked.status, 429, "locked on this replica too, right password or not");
      const body = await locked.json();
      t.equal(body.error.code, "RATE_LIMITED");
      t.equal(body.error.details.scope, "username");
      const retryAfter = Number(locked.headers.get("retry-after"));
      t.ok(retryAfter >= 1 && retryAfter <= 30, `Retry-After ${retryAfter}`);
    }
    t.equal(
      (await grant(first, bystander.username, bystander.password)).status,
      200,
      "another username from the same address is served",
    );
  },
);

t.test("unknown usernames are counted and locked alike (the lock reveals nothing)", async (t) => {
  const server = await startTestServer(t, { env: BACKOFF });
  const unknown = `nobody-${randomUUID()}`;
  for (let i = 0; i < 4; i++) t.equal((await grant(server, unknown, "guess")).status, 400);
  t.equal((await grant(server, unknown, "guess")).status, 429);
  t.equal((await grant(server, unknown.toUpperCase(), "guess")).status, 429, "usernames are compared without case");
});

t.test("a successful grant clears the username's failure count", async (t) => {
  const server = await startTestServer(t, { env: BACKOFF });
  const tenant = await createTestTenant(server.services);
  const user = await createTestUser(server.services, tenant.tenantId);
  for (let i = 0; i < 3; i++) t.equal((await grant(server, user.username, "wrong")).status, 400);
  t.equal((await grant(server, user.username, user.password)).status, 200);
  for (let i = 0; i < 3; i++) t.equal((await grant(server, user.username, "wrong")).status, 400);
  t.equal((await grant(server, user.username, user.password)).status, 200, "not locked: the count started again");
});

t.test(
  "a flood of guesses beyond AUTH_HASH_CONCURRENCY + AUTH_HASH_QUEUE_MAX is refused at once with 503",
  async (t) => {
    const server = await startTestServer(t, { env: { AUTH_HASH_CONCURRENCY: "1", AUTH_HASH_QUEUE_MAX: "1" } });
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await grant(server, `flood-${i}-${randomUUID()}`, "guess");
        return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
      }),
    );
    const refused = answers.filter((answer) => answer.status === 503);
    const checked = answers.filter((answer) => answer.status === 400);
    t.ok(refused.length > 0, `some guesses were refused without hashing (${refused.length} of 20)`);
    t.ok(checked.length >= 2, `at least the running and the queued ones were checked (${checked.length})`);
    t.equal(refused.length + checked.length, 20, "nothing else (no 500)");
    for (const answer of refused) {
      t.equal(answer.body.error.code, "SERVICE_UNAVAILABLE");
      t.equal(answer.retryAfter, "1");
    }
    t.same(server.services.hashGate.load(), { running: 0, waiting: 0 }, "every slot is released afterwards");
    t.equal((await grant(server, "after-the-flood", "guess")).status, 400, "and the grant works again");
  },
);

t.test("concurrent wrong passwords: at most the free failures and one more are checked, the rest wait", async (t) => {
  const server = await startTestServer(t, {
    env: { ...BACKOFF, AUTH_HASH_CONCURRENCY: "4", AUTH_HASH_QUEUE_MAX: "100" },
  });
  const tenant = await createTestTenant(server.services);
  const user = await createTestUser(server.services, tenant.tenantId);
  const statuses = await Promise.all(
    Array.from({ length: 30 }, async () => (await grant(server, user.username, "wrong-password")).status),
  );
  const checked = statuses.filter((status) => status === 400).length;
  const locked = statuses.filter((status) => status === 429).length;
  t.equal(checked + locked, 30, `only invalid_grant and RATE_LIMITED (${statuses.join(",")})`);
  t.ok(checked <= 4, `at most AUTH_LOGIN_FREE_FAILURES + 1 = 4 guesses were checked (${checked})`);
  t.equal((await grant(server, user.username, user.password)).status, 429, "the username is locked now");
});

t.test("the username's counter is the one PostgreSQL's lower() finds the user by (İvan is ivan)", async (t) => {
  const server = await startTestServer(t, { env: BACKOFF });
  const tenant = await createTestTenant(server.services);
  // PostgreSQL's lower('İvan') is 'ivan'; JavaScript's 'İvan'.toLowerCase() is 'i̇van' (with U+0307).
  const spellings = async () => {
    const suffix = randomUUID().slice(0, 8);
    const password = randomUUID();
    const plain = `ivan-${suffix}`;
    await registerUser(server.services.db, {
      tenantId: tenant.tenantId,
      username: plain,
      password,
      roles: ["client_admin"],
    });
    return { plain, dotted: `İvan-${suffix}`, password };
  };

  const first = await spellings();
  t.equal((await grant(server, first.dotted, first.password)).status, 200, "the dotted spelling names the same user");
  for (let i = 0; i < 4; i++) t.equal((await grant(server, first.plain, "wrong")).status, 400);
  t.equal((await grant(server, first.dotted, first.password)).status, 429, "locked under the other spelling too");

  const second = await spellings();
  for (let i = 0; i < 4; i++) t.equal((await grant(server, second.dotted, "wrong")).status, 400);
  t.equal(
    (await grant(server, second.plain, second.password)).status,
    429,
    "failures under the dotted spelling lock the plain one",
  );
});
