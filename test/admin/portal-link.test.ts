// npm run admin -- portal:link --tenant T: a new link to a tenant's webhook portal, for when the first
// start's has expired. The command a later start prints for the demo tenant works as printed: its link
// opens the tenant's webhooks, is valid PORTAL_SESSION_TTL_MINUTES, and is an audited action of the admin
// CLI. With the default log level nothing but the JSON result is written (no log line on stderr).
import t from "tap";
import { demoHints } from "../../app/demo.ts";
import { listAudit } from "../../db/audit.ts";
import { runAdminCli } from "../helpers/admin-cli.ts";
import { startTestServer } from "../helpers/server.ts";

t.test("the portal:link command a later start prints makes a working link to the demo tenant's portal", async (t) => {
  const server = await startTestServer(t);
  await demoHints(server.services, server.baseUrl); // the first start: seeds the demo tenant
  const printed = /npm run admin -- (portal:link --tenant \S+)$/m.exec(
    await demoHints(server.services, server.baseUrl),
  )?.[1];
  if (!printed) return t.fail("a later start names the command");
  const tenantId = printed.split(" ")[2] ?? "";

  const run = await runAdminCli(server, printed.split(" "), { env: { LOG_LEVEL: "info" } });
  t.equal(run.code, 0, `exit 0 (${run.stderr})`);
  t.equal(run.stderr, "", "nothing on stderr: no log line");
  const link = JSON.parse(run.stdout) as { url: string; tenant_id: string; expires_at: string; expires_in: number };
  const base = server.services.config.publicBaseUrl;
  t.match(link, { tenant_id: tenantId, expires_in: server.services.config.portal.sessionTtlMinutes * 60 });
  t.ok(link.url.startsWith(`${base}/portal#token=`), `a link to the portal page (${link.url.slice(0, 40)}…)`);

  const credential = link.url.slice(`${base}/portal#token=`.length);
  const subscriptions = await server.request("/v1/webhooks/subscriptions", { token: credential });
  t.equal(subscriptions.status, 200, "its credential opens the tenant's webhooks");
  const me = (await (await server.request("/v1/me", { token: credential })).json()) as { tenant_id: string };
  t.equal(me.tenant_id, tenantId, "of that tenant");
  const audited = await listAudit(server.services.db, tenantId, "webhooks.portal_session_created");
  t.equal(audited.length, 2, "two links made: the first start's and this one");
  t.match(
    audited[1],
    { actor: "admin-cli", resource_type: "portal_session", details: { expires_at: link.expires_at } },
    "this one audited as the admin CLI's action",
  );
});
