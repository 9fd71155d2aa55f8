// Token rules of issue 12: the issuer does not depend on the port; exp and iat are required and the
// lifetime capped; disabled users and clients lose their tokens; signing keys rotate without breaking
// the tokens already issued.
import t from "tap";
import { randomUUID } from "node:crypto";
import { runAdminCli } from "./helpers/admin-cli.ts";
import { createTestTenant, startTestServer, type TestServer } from "./helpers/server.ts";

const poll = (server: TestServer, token: string) => server.request(`/v1/intake/submissions/${randomUUID()}`, { token });

t.test(
  "a token from admin token:issue run with another PORT verifies on the server (the issuer has no port)",
  async (t) => {
    const server = await startTestServer(t);
    const tenant = await createTestTenant(server.services);
    const issued = await runAdminCli({ env: { ...server.env, PORT: "18123" } }, [
      "token:issue",
      "--tenant",
      tenant.tenantId,
      "--subject",
      "ops",
      "--roles",
      "client_admin",
    ]);
    t.equal(issued.code, 0);
    const { access_token } = JSON.parse(issued.stdout) as { access_token: string };
    t.equal((await poll(server, access_token)).status, 404, "accepted (404: no such submission)");
  },
);
