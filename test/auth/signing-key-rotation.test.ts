// signing-key:rotate: the new key signs, retired keys keep verifying until their tokens expire, and the
// JWKS publishes both; with --revoke-previous (an emergency: a key leaked) the earlier keys stop verifying
// and leave the JWKS at once. Every rotation is an audit action of the admin CLI among the service's own.
import t from "tap";
import { decodeProtectedHeader } from "jose";
import { runAdminCli, runAdminCommand } from "../helpers/admin-cli.ts";
import {
  createTestTenant,
  createTestUser,
  startReplica,
  startTestServer,
  pollWithToken,
  tokenRequest,
} from "../helpers/server.ts";
import { adminCommands } from "../../admin/commands.ts";
import { registerClient } from "../../handlers/auth/principals.ts";
import { waitFor } from "../helpers/wait.ts";
import { SERVICE_AUDIT_TENANT_ID } from "../../db/audit.ts";

t.test(
  "signing-key:rotate: the new key signs, tokens of the retired key keep verifying, the JWKS publishes both",
  async (t) => {
    const server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
    const tenant = await createTestTenant(server.services);
    const oldKid = decodeProtectedHeader(tenant.token).kid;
    const rotated = await runAdminCli(server, ["signing-key:rotate"]);
    t.equal(rotated.code, 0);
    const {
      kid: newKid,
      retired,
      revoked,
    } = JSON.parse(rotated.stdout) as { kid: string; retired: string[]; revoked: string[] };
    t.not(newKid, oldKid);
    t.same(retired, [oldKid]);
    t.same(revoked, [], "without --revoke-previous it revokes nothing");

    // A token the CLI signs with the new key verifies at once (an unknown kid reloads the keys).
    const ops = await registerClient(server.services.db, { tenantId: tenant.tenantId, roles: ["client_admin"] });
    const issued = await runAdminCli(server, [
      "token:issue",
      "--tenant",
      tenant.tenantId,
      "--subject",
      ops.client_id,
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

t.test(
  "signing-key:rotate --revoke-previous: the old key leaves verification and the JWKS at once in this process, within AUTH_REFRESH_SECONDS elsewhere",
  async (t) => {
    const server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
    const replica = await startReplica(t, server, { AUTH_REFRESH_SECONDS: "1" });
    const tenant = await createTestTenant(server.services);
    const oldKid = decodeProtectedHeader(tenant.token).kid;
    t.equal((await pollWithToken(server, tenant.token)).status, 404, "the token works (and is remembered as verified)");
    t.equal((await pollWithToken(replica, tenant.token)).status, 404, "on the replica too");

    // In this process (the admin CLI's own, here the server's services): refused at once.
    const rotate = adminCommands["signing-key:rotate"];
    const rotated = (await rotate?.run(server.services, { "revoke-previous": "true" })) as {
      kid: string;
      revoked: string[];
    };
    t.same(rotated.revoked, [oldKid], "the previous key is revoked");
    t.equal((await pollWithToken(server, tenant.token)).status, 401, "its token is refused at once");
    const jwks = (await (await server.request("/.well-known/jwks.json")).json()) as { keys: { kid: string }[] };
    t.same(
      jwks.keys.map((key) => key.kid),
      [rotated.kid],
      "the JWKS publishes the new key alone at once",
    );

    // Another process: within AUTH_REFRESH_SECONDS.
    const refused = await waitFor(
      () => pollWithToken(replica, tenant.token).then((res) => res.status),
      (status) => status === 401,
      { seconds: 15 },
    );
    t.equal(refused, 401, "the replica refuses it once it has reloaded the keys");
    const replicaJwks = (await (await replica.request("/.well-known/jwks.json")).json()) as { keys: { kid: string }[] };
    t.notOk(
      replicaJwks.keys.some((key) => key.kid === oldKid),
      "nor does the replica publish it",
    );
    const fresh = await createTestTenant(server.services);
    t.equal(decodeProtectedHeader(fresh.token).kid, rotated.kid);
    t.equal((await pollWithToken(replica, fresh.token)).status, 404, "tokens of the new key work everywhere");
  },
);

t.test("signing-key:rotate without --revoke-previous revokes nothing; --revoke-previous through the CLI", async (t) => {
  const server = await startTestServer(t, { env: { AUTH_REFRESH_SECONDS: "1" } });
  const tenant = await createTestTenant(server.services);
  // The plain rotation through the CLI is the first test's; here it is the command in this process.
  const plain = (await runAdminCommand(server.services, "signing-key:rotate", {})) as {
    kid: string;
    revoked: string[];
  };
  t.same(plain.revoked, []);
  const emergency = await runAdminCli(server, ["signing-key:rotate", "--revoke-previous"]);
  t.equal(emergency.code, 0);
  t.equal((JSON.parse(emergency.stdout) as { revoked: string[] }).revoked.length, 2, "both earlier keys");
  const refused = await waitFor(
    () => pollWithToken(server, tenant.token).then((res) => res.status),
    (status) => status === 401,
    { seconds: 15 },
  );
  t.equal(refused, 401);

  // Both rotations are audited among the service's own actions: who, which keys, never a key.
  const audited = (await runAdminCommand(server.services, "audit:list", {
    tenant: SERVICE_AUDIT_TENANT_ID,
    action: "auth.signing_key_rotated",
  })) as { actor: string; resource_id: string; details: unknown }[];
  const plainKid = plain.kid;
  const { kid: emergencyKid, revoked } = JSON.parse(emergency.stdout) as { kid: string; revoked: string[] };
  t.match(audited, [
    {
      actor: "admin-cli",
      resource_type: "signing_key",
      resource_id: plainKid,
      details: { revoke_previous: false, revoked: [] },
    },
    {
      actor: "admin-cli",
      resource_type: "signing_key",
      resource_id: emergencyKid,
      details: { revoke_previous: true, revoked, retired: [plainKid] },
    },
  ]);
  t.equal(audited.length, 2, "one action per rotation");
  const keys = await server.services.db("integrator.signing_keys").select("private_jwk_encrypted", "public_jwk");
  const recorded = JSON.stringify(audited);
  for (const key of keys) {
    t.notOk(recorded.includes(key.private_jwk_encrypted), "no sealed private key");
    t.notOk(recorded.includes(String((key.public_jwk as { x: string }).x)), "no key material at all");
  }
});
