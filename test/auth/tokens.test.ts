// Bearer tokens, roles, the token endpoint (RFC 6749) and the JWKS endpoint.
import t from "tap";
import { createRemoteJWKSet, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { createTestTenant, createTestUser, startTestServer, tokenRequest } from "../helpers/server.ts";
import { registerClient } from "../../handlers/auth/principals.ts";
import { startIdentityProvider } from "../helpers/identity-provider.ts";

// A protected operation that exists in every build: the subscriptions list.
const PROTECTED = "/v1/webhooks/subscriptions";

t.test("bearer tokens", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);

  t.test("a request without a bearer token is answered 401 with the envelope and a Bearer challenge", async (t) => {
    const res = await server.request(PROTECTED);
    t.equal(res.status, 401);
    t.match(res.headers.get("www-authenticate"), /^Bearer/);
    const body = await res.json();
    t.equal(body.error.code, "UNAUTHORIZED");
    t.type(body.request_id, "string");
    t.equal(res.headers.get("x-request-id"), body.request_id);
  });

  t.test("a malformed token is 401", async (t) => {
    const res = await server.request(PROTECTED, { token: "not.a.jwt" });
    t.equal(res.status, 401);
    t.match(res.headers.get("www-authenticate"), /error="invalid_token"/);
    t.equal((await res.json()).error.code, "UNAUTHORIZED");
  });

  t.test("a non-Bearer authorization scheme is 401", async (t) => {
    const res = await server.request(PROTECTED, {
      headers: { Authorization: `Basic ${Buffer.from("a:b").toString("base64")}` },
    });
    t.equal(res.status, 401);
  });

  t.test("an expired token is 401", async (t) => {
    const { token } = await server.services.tokens.issue({
      subject: "s",
      tenantId: tenant.tenantId,
      roles: ["client_admin"],
      expiresInSeconds: -120,
    });
    const res = await server.request(PROTECTED, { token });
    t.equal(res.status, 401);
  });

  t.test("a token signed by another key is 401", async (t) => {
    const { privateKey } = await generateKeyPair("ES256");
    const kid = (server.services.tokens.jwks().keys[0] as { kid: string }).kid;
    const token = await new SignJWT({ tenant_id: tenant.tenantId, roles: ["client_admin"] })
      .setProtectedHeader({ alg: "ES256", kid })
      .setSubject("intruder")
      .setIssuer(server.services.tokens.issuer)
      .setAudience(server.services.config.selfAudience)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
    const res = await server.request(PROTECTED, { token });
    t.equal(res.status, 401);
  });

  t.test("a token for another audience is 401", async (t) => {
    const { token } = await server.services.tokens.issue({
      subject: "s",
      tenantId: tenant.tenantId,
      roles: ["client_admin"],
      audience: "some-partner",
    });
    t.equal((await server.request(PROTECTED, { token })).status, 401);
  });

  t.test("an unsigned (alg none) token is 401", async (t) => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const now = Math.floor(Date.now() / 1000);
    const token = `${encode({ alg: "none", typ: "JWT" })}.${encode({ sub: "s", tenant_id: tenant.tenantId, roles: ["platform_admin"], iss: server.services.tokens.issuer, aud: server.services.config.selfAudience, exp: now + 300 })}.`;
    t.equal((await server.request(PROTECTED, { token })).status, 401);
  });

  t.test("a valid token without client_admin or platform_admin is 403 FORBIDDEN", async (t) => {
    const viewer = await createTestTenant(server.services, ["viewer"]);
    const res = await server.request(PROTECTED, { token: viewer.token });
    t.equal(res.status, 403);
    t.equal((await res.json()).error.code, "FORBIDDEN");
  });

  t.test("client_admin and platform_admin tokens pass authentication", async (t) => {
    for (const role of ["client_admin", "platform_admin"]) {
      const principal = await createTestTenant(server.services, [role]);
      const res = await server.request(PROTECTED, { token: principal.token });
      t.notOk([401, 403].includes(res.status), `${role} is let through (status ${res.status})`);
    }
  });

  t.test("open operations need no token", async (t) => {
    t.equal((await server.request("/v1/health")).status, 200);
    t.equal((await server.request("/.well-known/jwks.json")).status, 200);
  });
});

t.test("POST /token", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const user = await createTestUser(server.services, tenant.tenantId, ["client_admin"]);
  const client = await registerClient(server.services.db, { tenantId: tenant.tenantId, roles: ["client_admin"] });
  const form = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    tokenRequest(server, fields, headers);

  t.test("the password grant issues a bearer token that the API accepts", async (t) => {
    const res = await form({ grant_type: "password", username: user.username, password: user.password });
    t.equal(res.status, 200);
    t.equal(res.headers.get("cache-control"), "no-store");
    const body = await res.json();
    t.equal(body.token_type, "bearer");
    t.equal(body.expires_in, 900);
    const principal = await server.services.tokens.verify(body.access_token);
    t.equal(principal.tenantId, tenant.tenantId);
    t.same(principal.roles, ["client_admin"]);
    t.notOk([401, 403].includes((await server.request(PROTECTED, { token: body.access_token })).status));
  });

  t.test("a wrong password is 400 invalid_grant, like an unknown user", async (t) => {
    for (const fields of [
      { grant_type: "password", username: user.username, password: "wrong-password" },
      { grant_type: "password", username: "nobody-here", password: "whatever1" },
    ]) {
      const res = await form(fields);
      t.equal(res.status, 400);
      t.same(await res.json(), { error: "invalid_grant", error_description: "Invalid username or password" });
    }
  });

  t.test("missing grant_type or password-grant fields is 400 invalid_request", async (t) => {
    for (const fields of [{}, { grant_type: "password", username: user.username }] as Record<string, string>[]) {
      const res = await form(fields);
      t.equal(res.status, 400);
      t.equal((await res.json()).error, "invalid_request");
    }
  });

  t.test("an unknown grant type is 400 unsupported_grant_type", async (t) => {
    const res = await form({ grant_type: "authorization_code", code: "x" });
    t.equal(res.status, 400);
    t.equal((await res.json()).error, "unsupported_grant_type");
  });

  t.test("client_credentials with the secret in the form issues a token", async (t) => {
    const res = await form({
      grant_type: "client_credentials",
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
    t.equal(res.status, 200);
    const principal = await server.services.tokens.verify((await res.json()).access_token);
    t.equal(principal.subject, client.client_id);
  });

  t.test("client_credentials with HTTP Basic issues a token", async (t) => {
    const basic = Buffer.from(`${client.client_id}:${client.client_secret}`).toString("base64");
    const res = await form({ grant_type: "client_credentials" }, { Authorization: `Basic ${basic}` });
    t.equal(res.status, 200);
  });

  t.test("a wrong client secret is 401 invalid_client (with a Basic challenge when Basic was used)", async (t) => {
    const res = await form({ grant_type: "client_credentials", client_id: client.client_id, client_secret: "nope" });
    t.equal(res.status, 401);
    t.equal((await res.json()).error, "invalid_client");
    const basic = Buffer.from(`${client.client_id}:nope`).toString("base64");
    const viaBasic = await form({ grant_type: "client_credentials" }, { Authorization: `Basic ${basic}` });
    t.equal(viaBasic.status, 401);
    t.match(viaBasic.headers.get("www-authenticate"), /^Basic/);
  });

  t.test("client credentials in both the form and Basic is 400 invalid_request", async (t) => {
    const basic = Buffer.from(`${client.client_id}:${client.client_secret}`).toString("base64");
    const res = await form(
      { grant_type: "client_credentials", client_id: client.client_id, client_secret: client.client_secret },
      { Authorization: `Basic ${basic}` },
    );
    t.equal(res.status, 400);
    t.equal((await res.json()).error, "invalid_request");
  });

  t.test("a repeated form field is 400 invalid_request, not a validation list", async (t) => {
    const res = await server.request("/token", {
      method: "POST",
      body: "grant_type=password&grant_type=client_credentials",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    t.equal(res.status, 400);
    t.equal((await res.json()).error, "invalid_request");
  });

  t.test("a JSON body is 415", async (t) => {
    const res = await server.request("/token", { method: "POST", json: { grant_type: "password" } });
    t.equal(res.status, 415);
    t.equal((await res.json()).error.code, "UNSUPPORTED_MEDIA_TYPE");
  });
});

t.test("GET /.well-known/jwks.json lets anyone verify the service's tokens", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const keys = createRemoteJWKSet(new URL(`${server.baseUrl}/.well-known/jwks.json`));
  const { payload } = await jwtVerify(tenant.token, keys, {
    issuer: server.services.tokens.issuer,
    audience: "integrator-api",
  });
  t.equal(payload.tenant_id, tenant.tenantId);
  const jwks = await (await server.request("/.well-known/jwks.json")).json();
  t.notOk(JSON.stringify(jwks).includes('"d"'), "no private key material is published");
});

t.test("tokens of an external identity provider are accepted through the AUTH_* settings", async (t) => {
  const { jwksUrl, privateKey } = await startIdentityProvider(t);
  const server = await startTestServer(t, {
    env: {
      AUTH_JWKS_URL: jwksUrl,
      AUTH_ISSUER: "https://idp.example.test/realms/acme",
      AUTH_AUDIENCE: "integrator",
      AUTH_TENANT_CLAIM: "org.tenant",
      AUTH_ROLES_CLAIM: "realm_access.roles",
    },
  });
  const tenant = await createTestTenant(server.services);
  const sign = (audience: string, roles: string[]) =>
    new SignJWT({ org: { tenant: tenant.tenantId }, realm_access: { roles } })
      .setProtectedHeader({ alg: "RS256", kid: "idp-1" })
      .setSubject("idp-user")
      .setIssuer("https://idp.example.test/realms/acme")
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);

  const accepted = await server.request(PROTECTED, { token: await sign("integrator", ["client_admin"]) });
  t.notOk(
    [401, 403].includes(accepted.status),
    `an IdP token with the roles claim at a dotted path is accepted (status ${accepted.status})`,
  );
  t.equal(
    (await server.request(PROTECTED, { token: await sign("someone-else", ["client_admin"]) })).status,
    401,
    "wrong audience is 401",
  );
  t.equal(
    (await server.request(PROTECTED, { token: await sign("integrator", ["auditor"]) })).status,
    403,
    "roles are enforced for IdP tokens too",
  );
});
