// Token rules of issue 12: the issuer does not depend on the port; exp and iat are required and the
// lifetime capped; disabled users and clients lose their tokens; signing keys rotate without breaking
// the tokens already issued.
import http from "node:http";
import { randomUUID } from "node:crypto";
import t from "tap";
import { decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from "jose";
import { runAdminCli } from "./helpers/admin-cli.ts";
import { createTestTenant, createTestUser, startTestServer, type TestServer } from "./helpers/server.ts";
import { waitFor } from "./helpers/wait.ts";

const poll = (server: TestServer, token: string) => server.request(`/v1/intake/submissions/${randomUUID()}`, { token });

t.test(
  "a token from admin token:issue run with another PORT verifies on the server (the issuer has no port)",
  async (t) => {
    const server = await startTestServer(t);
    const tenant = await createTestTenant(server.services);
    const issued = await runAdminCli({ env: { ...server.env, PORT: "18123" } }, [
      "token:issue",
      "--tenant",
      tenant.tenantId,
      "--subject",
      "ops",
      "--roles",
      "client_admin",
    ]);
    t.equal(issued.code, 0);
    const { access_token } = JSON.parse(issued.stdout) as { access_token: string };
    t.equal((await poll(server, access_token)).status, 404, "accepted (404: no such submission)");
  },
);

/** A token signed with the service's own current key, with exactly the claims given. */
async function signOwn(server: TestServer, claims: Record<string, unknown>): Promise<string> {
  const row = await server.services
    .db<{ kid: string; private_jwk_encrypted: string; retired_at: Date | null; created_at: Date }>(
      "integrator.signing_keys",
    )
    .whereNull("retired_at")
    .orderBy("created_at", "desc")
    .first("kid", "private_jwk_encrypted");
  if (!row) throw new Error("no active signing key");
  const key = await importJWK(JSON.parse(server.services.secretBox.open(row.private_jwk_encrypted)) as JWK, "ES256");
  return new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid: row.kid, typ: "JWT" }).sign(key);
}

t.test("our own tokens need exp and iat, and a lifetime within AUTH_MAX_TOKEN_LIFETIME_SECONDS", async (t) => {
  const server = await startTestServer(t, { env: { AUTH_MAX_TOKEN_LIFETIME_SECONDS: "3600" } });
  const tenant = await createTestTenant(server.services);
  const now = Math.floor(Date.now() / 1000);
  const base = {
    sub: "s",
    tenant_id: tenant.tenantId,
    roles: ["client_admin"],
    iss: server.services.tokens.issuer,
    aud: server.services.config.selfAudience,
    jti: randomUUID(),
  };
  t.equal(
    (await poll(server, await signOwn(server, { ...base, iat: now, exp: now + 3600 }))).status,
    404,
    "a valid one",
  );
  t.equal((await poll(server, await signOwn(server, { ...base, iat: now }))).status, 401, "no exp");
  t.equal((await poll(server, await signOwn(server, { ...base, exp: now + 300 }))).status, 401, "no iat");
  t.equal(
    (await poll(server, await signOwn(server, { ...base, iat: now, exp: now + 10 * 365 * 86400 }))).status,
    401,
    "exp ten years ahead",
  );
  t.equal(
    (await poll(server, await signOwn(server, { ...base, iat: now, exp: now + 3601 }))).status,
    401,
    "one second over the cap",
  );
  t.equal(
    (await poll(server, await signOwn(server, { ...base, iat: now + 3600, exp: now + 3700 }))).status,
    401,
    "iat in the future",
  );
  const cli = await runAdminCli(server, [
    "token:issue",
    "--tenant",
    tenant.tenantId,
    "--subject",
    "ops",
    "--roles",
    "client_admin",
    "--expires-in",
    "3601",
  ]);
  t.equal(cli.code, 2, "admin token:issue refuses a lifetime beyond the cap");
});

t.test("external provider tokens need exp and iat and a lifetime within the cap too", async (t) => {
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "idp-1", alg: "RS256", use: "sig" };
  const idp = http.createServer((_req, res) => {
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => idp.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => idp.close(() => resolve())));
  const address = idp.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const ISSUER = "https://idp.example.test/realms/acme";
  const server = await startTestServer(t, {
    env: {
      AUTH_JWKS_URL: `http://127.0.0.1:${port}/jwks`,
      AUTH_ISSUER: ISSUER,
      AUTH_MAX_TOKEN_LIFETIME_SECONDS: "3600",
    },
  });
  const tenant = await createTestTenant(server.services);
  const now = Math.floor(Date.now() / 1000);
  const sign = (times: { iat?: number; exp?: number }) =>
    new SignJWT({ tenant_id: tenant.tenantId, roles: ["client_admin"], sub: "idp-user", iss: ISSUER, ...times })
      .setProtectedHeader({ alg: "RS256", kid: "idp-1" })
      .sign(privateKey);
  t.equal((await poll(server, await sign({ iat: now, exp: now + 600 }))).status, 404, "a valid one");
  t.equal((await poll(server, await sign({ iat: now }))).status, 401, "no exp");
  t.equal((await poll(server, await sign({ exp: now + 600 }))).status, 401, "no iat");
  t.equal((await poll(server, await sign({ iat: now, exp: now + 10 * 365 * 86400 }))).status, 401, "ten years");
});

const form = (server: TestServer, fields: Record<string, string>) =>
  server.request("/token", {
    method: "POST",
    body: new URLSearchParams(fields).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
  });

t.test("user:disable: the user's existing tokens stop working and the password grant refuses it", async (t) => {
  const server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
  const tenant = await createTestTenant(server.services);
  const username = `disable-${randomUUID().slice(0, 8)}`;
  const created = await runAdminCli(
    server,
    ["user:create", "--tenant", tenant.tenantId, "--username", username, "--roles", "client_admin"],
    { stdin: "correct horse battery\n" },
  );
  t.equal(created.code, 0, "user:create reads the password from standard input");
  const granted = await form(server, { grant_type: "password", username, password: "correct horse battery" });
  t.equal(granted.status, 200);
  const { access_token } = (await granted.json()) as { access_token: string };
  t.equal((await poll(server, access_token)).status, 404, "the token works");
  const other = await createTestTenant(server.services);

  const disabled = await runAdminCli(server, ["user:disable", "--username", username]);
  t.equal(disabled.code, 0);
  t.equal(JSON.parse(disabled.stdout).username, username);
  const refused = await waitFor(
    () => poll(server, access_token).then((res) => res.status),
    (status) => status === 401,
    { seconds: 10 },
  );
  t.equal(refused, 401, "the existing token is refused within AUTH_REFRESH_SECONDS");
  const again = await form(server, { grant_type: "password", username, password: "correct horse battery" });
  t.equal(again.status, 400);
  t.equal((await again.json()).error, "invalid_grant", "no new token either");
  t.equal((await poll(server, other.token)).status, 404, "other principals are unaffected");
  t.equal((await runAdminCli(server, ["user:disable", "--username", "nobody-here"])).code, 2);
});

t.test("client:disable: the client's existing tokens stop working and client_credentials refuses it", async (t) => {
  const server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
  const tenant = await createTestTenant(server.services);
  const created = await runAdminCli(server, ["client:create", "--tenant", tenant.tenantId, "--roles", "client_admin"]);
  const client = JSON.parse(created.stdout) as { client_id: string; client_secret: string };
  const grant = () =>
    form(server, {
      grant_type: "client_credentials",
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
  const granted = await grant();
  t.equal(granted.status, 200);
  const { access_token } = (await granted.json()) as { access_token: string };
  t.equal((await poll(server, access_token)).status, 404);
  t.equal((await runAdminCli(server, ["client:disable", "--client", client.client_id])).code, 0);
  const refused = await waitFor(
    () => poll(server, access_token).then((res) => res.status),
    (status) => status === 401,
    { seconds: 10 },
  );
  t.equal(refused, 401, "the existing token is refused");
  const again = await grant();
  t.equal(again.status, 401);
  t.equal((await again.json()).error, "invalid_client");
});

t.test("user:create takes no password on the command line", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const args = ["user:create", "--tenant", tenant.tenantId, "--username", "argv-user", "--roles", "client_admin"];
  t.equal((await runAdminCli(server, [...args, "--password", "s3cret-password"])).code, 2, "--password is refused");
  t.equal((await runAdminCli(server, args)).code, 2, "nothing on standard input is a usage error");
  t.notOk(await server.services.db("integrator.users").where({ username: "argv-user" }).first(), "no user was created");
});

t.test(
  "signing-key:rotate: the new key signs, tokens of the retired key keep verifying, the JWKS publishes both",
  async (t) => {
    const server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
    const tenant = await createTestTenant(server.services);
    const oldKid = decodeProtectedHeader(tenant.token).kid;
    const rotated = await runAdminCli(server, ["signing-key:rotate"]);
    t.equal(rotated.code, 0);
    const { kid: newKid, retired } = JSON.parse(rotated.stdout) as { kid: string; retired: string[] };
    t.not(newKid, oldKid);
    t.same(retired, [oldKid]);

    // A token the CLI signs with the new key verifies at once (an unknown kid reloads the keys).
    const issued = await runAdminCli(server, [
      "token:issue",
      "--tenant",
      tenant.tenantId,
      "--subject",
      "ops",
      "--roles",
      "client_admin",
    ]);
    const fresh = (JSON.parse(issued.stdout) as { access_token: string }).access_token;
    t.equal(decodeProtectedHeader(fresh).kid, newKid, "the CLI signs with the new key");
    t.equal((await poll(server, fresh)).status, 404, "the running server verifies it");
    t.equal((await poll(server, tenant.token)).status, 404, "the retired key's token still verifies");

    const jwks = await waitFor(
      async () => (await (await server.request("/.well-known/jwks.json")).json()) as { keys: { kid: string }[] },
      (body) => body.keys.length === 2,
      { seconds: 10 },
    );
    t.same(jwks.keys.map((key) => key.kid).sort(), [oldKid, newKid].sort(), "the JWKS publishes both keys");
    const user = await createTestUser(server.services, tenant.tenantId);
    const granted = await waitFor(
      async () => {
        const res = await form(server, { grant_type: "password", ...user });
        return ((await res.json()) as { access_token: string }).access_token;
      },
      (token) => decodeProtectedHeader(token).kid === newKid,
      { seconds: 10 },
    );
    t.equal(decodeProtectedHeader(granted).kid, newKid, "the server signs with the new key once it has reloaded");
  },
);
