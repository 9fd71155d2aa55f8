// user:disable and client:disable: a disabled principal gets no new token and its existing tokens are
// refused within AUTH_REFRESH_SECONDS; user:create reads the password from standard input, never argv.
import { randomUUID } from "node:crypto";
import t from "tap";
import { runAdminCli } from "./helpers/admin-cli.ts";
import { createTestTenant, startTestServer, type TestServer } from "./helpers/server.ts";
import { waitFor } from "./helpers/wait.ts";

const poll = (server: TestServer, token: string) => server.request(`/v1/intake/submissions/${randomUUID()}`, { token });

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
