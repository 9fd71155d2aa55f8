// user:create reads the password from standard input: a password on the command line (visible in ps
// and shell history) is refused, and so is an empty standard input.
import t from "tap";
import { runAdminCli } from "../helpers/admin-cli.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

t.test("user:create takes no password on the command line", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const args = ["user:create", "--tenant", tenant.tenantId, "--username", "argv-user", "--roles", "client_admin"];
  t.equal((await runAdminCli(server, [...args, "--password", "s3cret-password"])).code, 2, "--password is refused");
  t.equal((await runAdminCli(server, args)).code, 2, "nothing on standard input is a usage error");
  t.notOk(await server.services.db("integrator.users").where({ username: "argv-user" }).first(), "no user was created");
});
