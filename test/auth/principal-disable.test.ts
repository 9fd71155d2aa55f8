// user:disable and client:disable: a disabled principal gets no new token and its existing tokens are
// refused within AUTH_REFRESH_SECONDS; user:create reads the password from standard input, never argv.
import { randomUUID } from "node:crypto";
import t from "tap";
import { runAdminCli } from "../helpers/admin-cli.ts";
import { createTestTenant, startTestServer, pollWithToken, tokenRequest } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";
import { registerClient } from "../../handlers/auth/principals.ts";

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
  const server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
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
