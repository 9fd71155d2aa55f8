// The whole suite must exercise every operation of the document: test servers record what they answer
// (when npm test runs everything, into a directory it names), and the run fails naming each operation
// that never answered 2xx. Here a test server records into a directory of this test's own.
import fs from "node:fs";
import t from "tap";
import { loadDocument } from "../../http/openapi-document.ts";
import { operationsOf } from "../../scripts/openapi-source.ts";
import {
  coverageReport,
  OPERATIONS_DIR_ENV,
  servedOperations,
  unexercisedOperations,
} from "../../scripts/operation-coverage.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/temp-dir.ts";

t.test("a test server records each operation it answers, and the report names those never answered 2xx", async (t) => {
  const directory = tempDir(t, "operations-");
  const previous = process.env[OPERATIONS_DIR_ENV];
  process.env[OPERATIONS_DIR_ENV] = directory;
  const server = await startTestServer(t).finally(() => {
    if (previous === undefined) delete process.env[OPERATIONS_DIR_ENV];
    else process.env[OPERATIONS_DIR_ENV] = previous;
  });
  const tenant = await createTestTenant(server.services);

  t.equal((await server.request("/v1/health")).status, 200);
  t.equal((await server.request("/v1/health")).status, 200);
  t.equal((await server.request("/v1/me")).status, 401);
  t.equal((await server.request("/v1/me", { token: tenant.token })).status, 200);
  t.equal((await server.request("/v1/webhooks/subscriptions")).status, 401);
  t.equal((await server.request("/no/such/route")).status, 404);

  const lines = fs
    .readdirSync(directory)
    .flatMap((name) => fs.readFileSync(`${directory}/${name}`, "utf8").trim().split("\n"))
    .sort();
  t.same(
    lines,
    ["getCurrentPrincipal 200", "getCurrentPrincipal 401", "getHealth 200", "listWebhookSubscriptions 401"],
    "once per operation and status; an unknown route is no operation",
  );

  const document = loadDocument() as unknown as Record<string, unknown>;
  const missing = unexercisedOperations(document, servedOperations(directory));
  const names = missing.map((entry) => entry.operationId);
  t.notOk(names.includes("getHealth"), "an operation answered 2xx is exercised");
  t.notOk(names.includes("getCurrentPrincipal"), "whatever else it answered too");
  t.same(
    missing.find((entry) => entry.operationId === "listWebhookSubscriptions"),
    { operationId: "listWebhookSubscriptions", statuses: [401] },
    "an operation only refused is not exercised",
  );
  t.ok(names.includes("submitIntake"), "one never called is named");
  t.notOk(
    names.some((name) => name.startsWith("webhook")),
    "the webhooks section is sent, not served: it is checked on the receivers' side",
  );
  const served = operationsOf(document).filter((entry) => !entry.webhook).length;
  t.equal(missing.length, served - 2, "every other path operation is named");

  const report = coverageReport(document, directory);
  t.match(report[0], `${missing.length} operation(s) of the document never answered 2xx in the suite`);
  t.ok(report.includes("  listWebhookSubscriptions (answered only 401)"));
  t.ok(report.includes("  submitIntake (never called)"));
});
