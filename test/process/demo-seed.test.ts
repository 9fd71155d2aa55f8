// The development start's demo hints (app/demo.ts, printed by app/main.ts on an empty embedded database):
// the first start seeds a demo tenant and prints its user once with a short-lived token in a curl line;
// every later start prints how to get a token, and no token; both name the command for a new portal link.
import { decodeJwt } from "jose";
import t from "tap";
import { demoHints } from "../../app/demo.ts";
import { pollWithToken, startTestServer } from "../helpers/server.ts";

t.test("a token is printed on the first seed only, and it is short-lived", async (t) => {
  const server = await startTestServer(t);
  const first = await demoHints(server.services, "http://localhost:8080");
  t.match(first, /^Seeded a demo tenant\. Demo user: demo-admin \/ \S+ \(shown once\)$/m);
  const token = /Bearer ([\w-]+\.[\w-]+\.[\w-]+)/.exec(first)?.[1] ?? "";
  t.ok(token, "the first start's curl line carries a token");
  const claims = decodeJwt(token);
  t.ok(
    (claims.exp ?? 0) - (claims.iat ?? 0) <= 900,
    `it lives ${(claims.exp ?? 0) - (claims.iat ?? 0)} s, at most 15 min`,
  );
  t.equal((await pollWithToken(server, token)).status, 404, "and it works");

  const later = await demoHints(server.services, "http://localhost:8080");
  t.notMatch(later, /Bearer ey/, "a later start prints no token");
  t.notMatch(later, /Seeded/, "nor the password");
  t.match(later, /grant_type=password/, "but how to get one with the demo user");

  // Both name the admin command that makes a new portal link for the demo tenant (test/admin/portal-link.test.ts runs it).
  const tenantId = (await server.services.db("integrator.users").where({ username: "demo-admin" }).first()).tenant_id;
  const command = `npm run admin -- portal:link --tenant ${tenantId}`;
  t.match(first, `(the link is valid for 15 minutes; the page can extend it; a new link: ${command}):\n`, "first");
  t.match(later, `A link to the demo tenant's webhook portal: ${command}\n`, "later");
});
