// A lost database is the service's state, not the request's fault: 503 SERVICE_UNAVAILABLE with the
// Retry-After the service means (DATABASE_RETRY_AFTER_SECONDS), and the first request once PostgreSQL is
// back is served: the service adds no wait of its own to the database's.
import t from "tap";
import { DATABASE_RETRY_AFTER_SECONDS } from "../../http/error-handler.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { databaseRelay } from "../helpers/database-relay.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

t.test(
  "a lost database answers 503 with Retry-After: 2, and the first request after it is back is served",
  async (t) => {
    const relay = await databaseRelay(t, await createTestDatabase(t));
    const server = await startTestServer(t, { databaseUrl: relay.url });
    const tenant = await createTestTenant(server.services);
    const submit = () =>
      server.request("/v1/intake/submit", {
        method: "POST",
        token: tenant.token,
        json: { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf" },
      });
    t.equal((await submit()).status, 201, "served while the database is there");

    await relay.cut();
    for (const attempt of ["with pooled connections gone", "with no connection possible"]) {
      const refused = await submit();
      t.equal(refused.status, 503, attempt);
      t.equal(refused.headers.get("retry-after"), "2", `${attempt}: Retry-After 2`);
      t.match(await refused.json(), { error: { code: "SERVICE_UNAVAILABLE" } });
    }

    await relay.restore();
    const restoredAt = performance.now();
    const first = await submit();
    const waited = performance.now() - restoredAt;
    t.equal(first.status, 201, `the first request after the database is back is served (in ${waited.toFixed(0)} ms)`);
    t.ok(waited < DATABASE_RETRY_AFTER_SECONDS * 1000, "sooner than Retry-After asked the client to wait");
  },
);
