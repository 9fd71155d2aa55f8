// npm run admin -- token:issue: a token only for a subject that exists in that tenant and is enabled (a
// user, by id or username, or an API client) and only with roles that principal holds; every token issued
// is an audit action of the admin CLI.
import t from "tap";
import { runAdminCli, runAdminCommand } from "../helpers/admin-cli.ts";
import { createTestTenant, pollWithToken, startTestServer } from "../helpers/server.ts";
import { decodeJwt } from "jose";
import { registerClient, registerUser } from "../../handlers/auth/principals.ts";
import { listAudit } from "../../db/audit.ts";
import { UsageError } from "../../admin/commands.ts";

t.test("token:issue signs for existing, enabled users and clients of the tenant only", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const other = await createTestTenant(server.services);
  const user = await registerUser(server.services.db, {
    tenantId: tenant.tenantId,
    username: `ops-${crypto.randomUUID().slice(0, 8)}`,
    password: "correct horse battery",
    roles: ["client_admin"],
  });
  const client = await registerClient(server.services.db, { tenantId: tenant.tenantId, roles: ["client_admin"] });
  // The command's own rules, run as the CLI runs them but in this process (each CLI run costs a process
  // start): the second test below runs it through the CLI, which prints the token as JSON and turns a
  // refusal into exit code 2 and a sentence on stderr.
  const issue = (subject: string, extra: Record<string, string> = {}, tenantId = tenant.tenantId) =>
    runAdminCommand(server.services, "token:issue", { tenant: tenantId, subject, ...extra });
  const works = async (subject: string, extra: Record<string, string> = {}) => {
    const issued = (await issue(subject, extra)) as { access_token: string; subject: string };
    t.type(issued.access_token, "string", `${subject}: issued`);
    t.equal((await pollWithToken(server, issued.access_token)).status, 404, `${subject}: the token works`);
    return issued.subject;
  };

  t.equal(await works(user.id), user.id, "a user by id");
  t.equal(await works(user.username), user.id, "a user by username: the token carries the id");
  t.equal(await works(client.client_id, { roles: "client_admin" }), client.client_id, "a client");

  const refuses = (what: string, subject: string, extra: Record<string, string> = {}, tenantId = tenant.tenantId) =>
    t.rejects(issue(subject, extra, tenantId), UsageError, what);
  await refuses("an unknown subject is refused", "ops");
  await refuses("a user of another tenant is refused", user.id, {}, other.tenantId);
  await refuses("a client of another tenant is refused", client.client_id, {}, other.tenantId);
  await refuses("a role the user does not hold", user.id, { roles: "platform_admin" });

  await runAdminCommand(server.services, "user:disable", { username: user.username });
  await runAdminCommand(server.services, "client:disable", { client: client.client_id });
  await refuses("a disabled user is refused", user.id);
  await refuses("a disabled client is refused", client.client_id);
});

t.test("token:issue records an audit action of the admin CLI with the token's id, never the token", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const client = await registerClient(server.services.db, { tenantId: tenant.tenantId, roles: ["client_admin"] });
  const issued = await runAdminCli(server, [
    "token:issue",
    "--tenant",
    tenant.tenantId,
    "--subject",
    client.client_id,
    "--expires-in",
    "600",
  ]);
  t.equal(issued.code, 0);
  const { access_token } = JSON.parse(issued.stdout) as { access_token: string };
  t.equal((await pollWithToken(server, access_token)).status, 404, "the token the CLI signed works on the server");
  const claims = decodeJwt(access_token);
  const audited = await listAudit(server.services.db, tenant.tenantId, "auth.token_issued");
  t.equal(audited.length, 1, "one audit action");
  t.match(audited[0], {
    action: "auth.token_issued",
    tenant_id: tenant.tenantId,
    actor: "admin-cli",
    resource_type: "client",
    resource_id: client.client_id,
    details: {
      token_id: claims.jti,
      roles: ["client_admin"],
      expires_at: new Date((claims.exp ?? 0) * 1000).toISOString(),
    },
  });
  const recorded = JSON.stringify(audited);
  t.notOk(recorded.includes(access_token), "not the token");
  t.notOk(recorded.includes(access_token.split(".")[2] ?? "-"), "nor its signature");
  const listed = await runAdminCommand(server.services, "audit:list", {
    tenant: tenant.tenantId,
    action: "auth.token_issued",
  });
  t.match(listed, [{ actor: "admin-cli", resource_id: client.client_id }], "audit:list shows it");

  const refused = await runAdminCli(server, ["token:issue", "--tenant", tenant.tenantId, "--subject", "nobody"]);
  t.equal(refused.code, 2);
  t.equal(
    refused.stderr.split("\n")[0],
    `--subject nobody is no user (id or username) or client of tenant ${tenant.tenantId}.`,
    "a refusal is a sentence on stderr, followed by the usage",
  );
  t.match(refused.stderr.split("\n")[1], /^Usage: npm run admin -- token:issue --tenant T --subject S /);
  t.equal(
    (await listAudit(server.services.db, tenant.tenantId, "auth.token_issued")).length,
    1,
    "a refusal issues nothing",
  );
});
