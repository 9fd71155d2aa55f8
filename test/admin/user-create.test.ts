// user:create reads the password from standard input: a password on the command line (visible in ps
// and shell history) is refused, and so is an empty standard input.
import t from "tap";
import { runAdminCli, runAdminCommand } from "../helpers/admin-cli.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

t.test("user:create takes no password on the command line", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const args = ["user:create", "--tenant", tenant.tenantId, "--username", "argv-user", "--roles", "client_admin"];
  // The refusal of --password is the command's own rule, run in this process; the CLI turns a refusal into
  // exit code 2, as the run with nothing on standard input shows.
  await t.rejects(
    runAdminCommand(
      server.services,
      "user:create",
      { tenant: tenant.tenantId, username: "argv-user", roles: "client_admin", password: "s3cret-password" },
      "s3cret-password\n",
    ),
    { name: "UsageError", message: /^--password is not accepted/ },
    "--password is refused",
  );
  t.equal((await runAdminCli(server, args)).code, 2, "nothing on standard input is a usage error");
  t.notOk(await server.services.db("integrator.users").where({ username: "argv-user" }).first(), "no user was created");
});
