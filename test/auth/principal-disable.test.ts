// user:disable and client:disable: a disabled principal gets no new token and its existing tokens are
// refused within AUTH_REFRESH_SECONDS; user:create reads the password from standard input, never argv.
import { randomUUID } from "node:crypto";
import t from "tap";
import { runAdminCli, runAdminCommand } from "../helpers/admin-cli.ts";
import { createTestTenant, startTestServer, pollWithToken, tokenRequest, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";
import { registerClient } from "../../handlers/auth/principals.ts";

// One server for every case: each has tenants and principals of its own.
let server: TestServer;

t.before(async () => {
  server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
});

t.test("user:disable: the user's existing tokens stop working and the password grant refuses it", async (t) => {
  const tenant = await createTestTenant(server.services);
  const username = `disable-${randomUUID().slice(0, 8)}`;
  const created = await runAdminCli(
    server,
    ["user:create", "--tenant", tenant.tenantId, "--username", username, "--roles", "client_admin"],
    { stdin: "correct horse battery\n" },
  );
  t.equal(created.code, 0, "user:create reads the password from standard input");
  const granted = await tokenRequest(server, { grant_type: "password", username, password: "correct horse battery" });
  t.equal(granted.status, 200);
  const { access_token } = (await granted.json()) as { access_token: string };
  t.equal((await pollWithToken(server, access_token)).status, 404, "the token works");
  const other = await createTestTenant(server.services);

  const disabled = await runAdminCli(server, ["user:disable", "--username", username]);
  t.equal(disabled.code, 0);
  t.equal(JSON.parse(disabled.stdout).username, username);
  const refused = await waitFor(
    () => pollWithToken(server, access_token).then((res) => res.status),
    (status) => status === 401,
    { seconds: 30 },
  );
  t.equal(refused, 401, "the existing token is refused within AUTH_REFRESH_SECONDS");
  const again = await tokenRequest(server, { grant_type: "password", username, password: "correct horse battery" });
  t.equal(again.status, 400);
  t.equal((await again.json()).error, "invalid_grant", "no new token either");
  t.equal((await pollWithToken(server, other.token)).status, 404, "other principals are unaffected");
});

t.test("client:disable: the client's existing tokens stop working and client_credentials refuses it", async (t) => {
  const tenant = await createTestTenant(server.services);
  const client = await registerClient(server.services.db, { tenantId: tenant.tenantId, roles: ["client_admin"] });
  const grant = () =>
    tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
  const granted = await grant();
  t.equal(granted.status, 200);
  const { access_token } = (await granted.json()) as { access_token: string };
  t.equal((await pollWithToken(server, access_token)).status, 404);
  t.equal((await runAdminCli(server, ["client:disable", "--client", client.client_id])).code, 0);
  const refused = await waitFor(
    () => pollWithToken(server, access_token).then((res) => res.status),
    (status) => status === 401,
    { seconds: 30 },
  );
  t.equal(refused, 401, "the existing token is refused");
  const again = await grant();
  t.equal(again.status, 401);
  t.equal((await again.json()).error, "invalid_client");
});

t.test(
  "a portal link a platform_admin made for another tenant stops working when that admin is disabled",
  async (t) => {
    const home = await createTestTenant(server.services, ["client_admin"], "The platform's own tenant");
    const customer = await createTestTenant(server.services, ["client_admin"], "A customer tenant");
    const username = `platform-${randomUUID().slice(0, 8)}`;
    // user:create and user:disable through the CLI are the first test's; here they only set the scene.
    const created = (await runAdminCommand(
      server.services,
      "user:create",
      { tenant: home.tenantId, username, roles: "platform_admin" },
      "correct horse battery\n",
    )) as { username: string };
    t.equal(created.username, username);
    const granted = await tokenRequest(server, { grant_type: "password", username, password: "correct horse battery" });
    const { access_token } = (await granted.json()) as { access_token: string };
    const link = await server.request(`/v1/webhooks/portal-sessions?tenant_id=${customer.tenantId}`, {
      method: "POST",
      token: access_token,
    });
    t.equal(link.status, 201);
    const portalToken = new URL(((await link.json()) as { url: string }).url).hash.replace(/^#token=/, "");
    const listWithPortal = () =>
      server.request("/v1/webhooks/subscriptions", { token: portalToken }).then((res) => res.status);
    t.equal(await listWithPortal(), 200, "the link works for the customer's webhooks");

    t.match(await runAdminCommand(server.services, "user:disable", { username }), { username });
    const refused = await waitFor(listWithPortal, (status) => status === 401, { seconds: 15 });
    t.equal(refused, 401, "the link dies with the admin who made it, within AUTH_REFRESH_SECONDS");
    t.equal(
      (await server.request("/v1/webhooks/subscriptions", { token: customer.token })).status,
      200,
      "the customer's own principals are unaffected",
    );
  },
);

t.test("a portal credential that does not name the tenant of its creator is refused", async (t) => {
  const tenant = await createTestTenant(server.services);
  const anonymous = await server.services.tokens.issue({
    subject: tenant.subject,
    tenantId: tenant.tenantId,
    roles: [],
    audience: "integrator-portal",
    extraClaims: { scope: "webhooks:portal" },
    expiresInSeconds: 600,
  });
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: anonymous.token })).status, 401);
  const made = await server.services.tokens.issuePortal({
    subject: tenant.subject,
    tenantId: tenant.tenantId,
    creatorTenantId: tenant.tenantId,
    expiresInSeconds: 600,
  });
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: made.token })).status, 200);
});
