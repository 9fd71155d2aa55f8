// Token rules: the issuer does not depend on the port; exp and iat are required and the
// lifetime capped (AUTH_MAX_TOKEN_LIFETIME_SECONDS), for our own tokens and an external provider's.
import { randomUUID } from "node:crypto";
import t from "tap";
import { importJWK, SignJWT, type JWK } from "jose";
import { runAdminCli, runAdminCommand } from "../helpers/admin-cli.ts";
import { createTestTenant, startTestServer, type TestServer, pollWithToken } from "../helpers/server.ts";
import { startIdentityProvider } from "../helpers/identity-provider.ts";
import { registerClient } from "../../handlers/auth/principals.ts";

t.test(
  "a token from admin token:issue run with another PORT verifies on the server (the issuer has no port)",
  async (t) => {
    const server = await startTestServer(t);
    const tenant = await createTestTenant(server.services);
    const ops = await registerClient(server.services.db, { tenantId: tenant.tenantId, roles: ["client_admin"] });
    const issued = await runAdminCli({ env: { ...server.env, PORT: "18123" } }, [
      "token:issue",
      "--tenant",
      tenant.tenantId,
      "--subject",
      ops.client_id,
      "--roles",
      "client_admin",
    ]);
    t.equal(issued.code, 0);
    const { access_token } = JSON.parse(issued.stdout) as { access_token: string };
    t.equal((await pollWithToken(server, access_token)).status, 404, "accepted (404: no such submission)");
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
    (await pollWithToken(server, await signOwn(server, { ...base, iat: now, exp: now + 3600 }))).status,
    404,
    "a valid one",
  );
  t.equal((await pollWithToken(server, await signOwn(server, { ...base, iat: now }))).status, 401, "no exp");
  t.equal((await pollWithToken(server, await signOwn(server, { ...base, exp: now + 300 }))).status, 401, "no iat");
  t.equal(
    (await pollWithToken(server, await signOwn(server, { ...base, iat: now, exp: now + 10 * 365 * 86400 }))).status,
    401,
    "exp ten years ahead",
  );
  t.equal(
    (await pollWithToken(server, await signOwn(server, { ...base, iat: now, exp: now + 3601 }))).status,
    401,
    "one second over the cap",
  );
  t.equal(
    (await pollWithToken(server, await signOwn(server, { ...base, iat: now + 3600, exp: now + 3700 }))).status,
    401,
    "iat in the future",
  );
  const ops = await registerClient(server.services.db, { tenantId: tenant.tenantId, roles: ["client_admin"] });
  // The command's rule, in this process (the CLI turns its refusal into exit code 2: test/admin/token-issue.test.ts).
  await t.rejects(
    runAdminCommand(server.services, "token:issue", {
      tenant: tenant.tenantId,
      subject: ops.client_id,
      roles: "client_admin",
      "expires-in": "3601",
    }),
    { name: "UsageError", message: /^--expires-in must be between 1 and 3600 seconds/ },
    "admin token:issue refuses a lifetime beyond the cap",
  );
});

t.test("external provider tokens need exp and iat and a lifetime within the cap too", async (t) => {
  const { jwksUrl, privateKey } = await startIdentityProvider(t);
  const ISSUER = "https://idp.example.test/realms/acme";
  const server = await startTestServer(t, {
    env: {
      AUTH_JWKS_URL: jwksUrl,
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
  t.equal((await pollWithToken(server, await sign({ iat: now, exp: now + 600 }))).status, 404, "a valid one");
  t.equal((await pollWithToken(server, await sign({ iat: now }))).status, 401, "no exp");
  t.equal((await pollWithToken(server, await sign({ exp: now + 600 }))).status, 401, "no iat");
  t.equal(
    (await pollWithToken(server, await sign({ iat: now, exp: now + 10 * 365 * 86400 }))).status,
    401,
    "ten years",
  );
});
