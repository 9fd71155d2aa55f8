// signing-key:rotate: the new key signs, retired keys keep verifying until their tokens expire, and the
// JWKS publishes both.
import t from "tap";
import { decodeProtectedHeader } from "jose";
import { runAdminCli } from "../helpers/admin-cli.ts";
import { createTestTenant, createTestUser, startTestServer, pollWithToken, tokenRequest } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

t.test(
  "signing-key:rotate: the new key signs, tokens of the retired key keep verifying, the JWKS publishes both",
  async (t) => {
    const server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
    const tenant = await createTestTenant(server.services);
    const oldKid = decodeProtectedHeader(tenant.token).kid;
    const rotated = await runAdminCli(server, ["signing-key:rotate"]);
    t.equal(rotated.code, 0);
    const { kid: newKid, retired } = JSON.parse(rotated.stdout) as { kid: string; retired: string[] };
    t.not(newKid, oldKid);
    t.same(retired, [oldKid]);

    // A token the CLI signs with the new key verifies at once (an unknown kid reloads the keys).
    const issued = await runAdminCli(server, [
      "token:issue",
      "--tenant",
      tenant.tenantId,
      "--subject",
      "ops",
      "--roles",
      "client_admin",
    ]);
    const fresh = (JSON.parse(issued.stdout) as { access_token: string }).access_token;
    t.equal(decodeProtectedHeader(fresh).kid, newKid, "the CLI signs with the new key");
    t.equal((await pollWithToken(server, fresh)).status, 404, "the running server verifies it");
    t.equal((await pollWithToken(server, tenant.token)).status, 404, "the retired key's token still verifies");

    const jwks = await waitFor(
      async () => (await (await server.request("/.well-known/jwks.json")).json()) as { keys: { kid: string }[] },
      (body) => body.keys.length === 2,
      { seconds: 30 },
    );
    t.same(jwks.keys.map((key) => key.kid).sort(), [oldKid, newKid].sort(), "the JWKS publishes both keys");
    const user = await createTestUser(server.services, tenant.tenantId);
    const granted = await waitFor(
      async () => {
        const res = await tokenRequest(server, { grant_type: "password", ...user });
        return ((await res.json()) as { access_token: string }).access_token;
      },
      (token) => decodeProtectedHeader(token).kid === newKid,
      { seconds: 30 },
    );
    t.equal(decodeProtectedHeader(granted).kid, newKid, "the server signs with the new key once it has reloaded");
  },
);
