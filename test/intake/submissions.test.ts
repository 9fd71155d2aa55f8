// Intake: single and batch submission, item rules, counts and aggregate status, polling, tenancy,
// audit actions, and the status moves operators make through the admin commands.
import t from "tap";
import { runAdminCli, runAdminCommand } from "../helpers/admin-cli.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import type { Services } from "../../foundation/services.ts";
import type { components } from "../../generated/openapi.ts";

const pdf = { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf" };

type Submission = components["schemas"]["IntakeSubmissionResponse"];
type Item = components["schemas"]["IntakeItemResponse"];

async function countRows(services: Services, table: string, tenantId: string): Promise<number> {
  const row = await services
    .db(`integrator.${table}`)
    .where({ tenant_id: tenantId })
    .count<{ count: number }[]>("* as count")
    .first();
  return Number(row?.count ?? 0);
}

t.test("intake", async (t) => {
  const server = await startTestServer(t, { env: { INTAKE_MAX_FILE_SIZE_BYTES: "1000000" } });
  const tenant = await createTestTenant(server.services);
  const post = (path: string, json: unknown, token = tenant.token, headers: Record<string, string> = {}) =>
    server.request(path, { method: "POST", token, json, headers });

  t.test("a single submission is created with its item and answered 201", async (t) => {
    const res = await post("/v1/intake/submit", {
      ...pdf,
      module: "contracts",
      tier: "gold",
      external_reference: "ext-1",
      item_metadata: { matter: "A-1" },
    });
    t.equal(res.status, 201);
    t.equal(res.headers.get("idempotent-replayed"), null);
    const body = (await res.json()) as Submission;
    t.match(body, {
      tenant_id: tenant.tenantId,
      external_reference: "ext-1",
      module: "contracts",
      tier: "gold",
      item_count: 1,
      accepted_count: 1,
      failed_count: 0,
      status: "received",
      created_by: tenant.subject,
    });
    t.match(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, "RFC 3339 UTC with Z");
    const detail = await (await server.request(`/v1/intake/submissions/${body.id}`, { token: tenant.token })).json();
    t.same(detail.submission, body);
    t.equal(detail.items.length, 1);
    t.match(detail.items[0], {
      submission_id: body.id,
      document_id: null,
      filename: "contract.pdf",
      file_size: 48213,
      mime_type: "application/pdf",
      item_metadata: { matter: "A-1" },
      status: "pending",
      error_message: null,
    });
  });

  t.test("optional fields may be null or absent", async (t) => {
    const res = await post("/v1/intake/submit", {
      ...pdf,
      module: null,
      tier: null,
      external_reference: null,
      item_metadata: null,
    });
    t.equal(res.status, 201);
    t.match(await res.json(), { module: null, tier: null, external_reference: null });
  });

  t.test("a batch creates one submission with every item in order", async (t) => {
    const items = Array.from({ length: 100 }, (_, i) => ({ ...pdf, filename: `doc-${i}.pdf` }));
    const res = await post("/v1/intake/batch", { items, external_reference: "batch-1" });
    t.equal(res.status, 201);
    const body = (await res.json()) as Submission;
    t.match(body, { item_count: 100, accepted_count: 100, failed_count: 0, status: "received" });
    const detail = await (await server.request(`/v1/intake/submissions/${body.id}`, { token: tenant.token })).json();
    t.same(
      detail.items.map((item: Item) => item.filename),
      items.map((item) => item.filename),
    );
  });

  const rejections: [string, Record<string, unknown>, RegExp][] = [
    ["a MIME type outside the allowed list rejects the item", { mime_type: "application/x-msdownload" }, /mime_type/],
    ["a file_size above INTAKE_MAX_FILE_SIZE_BYTES rejects the item", { file_size: 1000001 }, /file_size exceeds/],
    ["a filename with a slash rejects the item", { filename: "../etc/passwd" }, /path separator/],
    ["a filename with a backslash rejects the item", { filename: "a\\b.pdf" }, /path separator/],
    ["a filename with a control character rejects the item", { filename: "a\u0007.pdf" }, /control characters/],
    ["a filename of dots only rejects the item", { filename: ".." }, /dots only/],
  ];
  for (const [rule, change, message] of rejections) {
    t.test(rule, async (t) => {
      const res = await post("/v1/intake/batch", { items: [pdf, { ...pdf, ...change }] });
      t.equal(res.status, 201, "the request succeeds");
      const body = (await res.json()) as Submission;
      t.match(body, { item_count: 2, accepted_count: 1, failed_count: 1, status: "received" });
      const detail = await (await server.request(`/v1/intake/submissions/${body.id}`, { token: tenant.token })).json();
      t.equal(detail.items[0].status, "pending");
      t.equal(detail.items[1].status, "rejected");
      t.match(detail.items[1].error_message, message);
    });
  }

  t.test("MIME types compare without case and parameters", async (t) => {
    const body = (await (
      await post("/v1/intake/submit", { ...pdf, mime_type: "Application/PDF; charset=binary" })
    ).json()) as Submission;
    t.equal(body.accepted_count, 1);
  });

  t.test("a submission whose every item is rejected is rejected", async (t) => {
    const res = await post("/v1/intake/submit", { ...pdf, mime_type: "application/zip" });
    t.equal(res.status, 201);
    t.match(await res.json(), { status: "rejected", accepted_count: 0, failed_count: 1 });
  });

  t.test("item_metadata over 16 KiB is 422 value_error and writes nothing", async (t) => {
    const before = await countRows(server.services, "intake_submissions", tenant.tenantId);
    const res = await post("/v1/intake/submit", { ...pdf, item_metadata: { note: "x".repeat(16 * 1024) } });
    t.equal(res.status, 422);
    const [issue] = (await res.json()).detail;
    t.same(issue.loc, ["body", "item_metadata"]);
    t.equal(issue.type, "value_error");
    t.equal(await countRows(server.services, "intake_submissions", tenant.tenantId), before);
  });

  t.test("item_metadata nested deeper than 5 is 422 value_error; depth 5 is accepted", async (t) => {
    const five = { a: { b: { c: { d: { e: 1 } } } } };
    t.equal((await post("/v1/intake/submit", { ...pdf, item_metadata: five })).status, 201);
    const six = { a: { b: { c: { d: { e: [1] } } } } };
    const res = await post("/v1/intake/batch", { items: [pdf, { ...pdf, item_metadata: six }] });
    t.equal(res.status, 422);
    const [issue] = (await res.json()).detail;
    t.same(issue.loc, ["body", "items", 1, "item_metadata"]);
    t.equal(issue.type, "value_error");
  });

  t.test("module, tier and external_reference lengths are enforced", async (t) => {
    const res = await post("/v1/intake/batch", {
      items: [pdf],
      module: "m".repeat(41),
      tier: "t".repeat(21),
      external_reference: "e".repeat(256),
    });
    t.equal(res.status, 422);
    const locs = (await res.json()).detail
      .map((issue: { loc: string[]; type: string }) => `${issue.loc.join(".")}:${issue.type}`)
      .sort();
    t.same(locs, [
      "body.external_reference:string_too_long",
      "body.module:string_too_long",
      "body.tier:string_too_long",
    ]);
  });

  t.test("an unknown submission id is 404, and so is an id that is not a UUID", async (t) => {
    for (const id of ["01a200e9-0000-7000-8000-000000000000", "not-a-uuid"]) {
      const res = await server.request(`/v1/intake/submissions/${id}`, { token: tenant.token });
      t.equal(res.status, 404);
      t.equal((await res.json()).error.code, "NOT_FOUND");
    }
  });

  t.test("another tenant's submission answers exactly like a missing one", async (t) => {
    const other = await createTestTenant(server.services);
    const theirs = (await (await post("/v1/intake/submit", pdf, other.token)).json()) as Submission;
    const res = await server.request(`/v1/intake/submissions/${theirs.id}`, { token: tenant.token });
    t.equal(res.status, 404);
    t.equal((await res.json()).error.message, "Submission not found");
  });

  t.test("tenant_id equal to the token's tenant is accepted", async (t) => {
    t.equal((await post(`/v1/intake/submit?tenant_id=${tenant.tenantId}`, pdf)).status, 201);
  });

  t.test("tenant_id of another tenant is 403 FORBIDDEN for a client_admin and writes nothing", async (t) => {
    const other = await createTestTenant(server.services);
    const res = await post(`/v1/intake/submit?tenant_id=${other.tenantId}`, pdf);
    t.equal(res.status, 403);
    t.equal((await res.json()).error.code, "FORBIDDEN");
    t.equal(await countRows(server.services, "intake_submissions", other.tenantId), 0);
    t.equal(
      (
        await server.request(
          `/v1/intake/submissions/00000000-0000-0000-0000-000000000000?tenant_id=${other.tenantId}`,
          { token: tenant.token },
        )
      ).status,
      403,
    );
  });

  t.test("a platform_admin may act on any tenant through tenant_id", async (t) => {
    const admin = await createTestTenant(server.services, ["platform_admin"]);
    const res = await post(`/v1/intake/submit?tenant_id=${tenant.tenantId}`, pdf, admin.token);
    t.equal(res.status, 201);
    const body = (await res.json()) as Submission;
    t.equal(body.tenant_id, tenant.tenantId);
    t.equal(body.created_by, admin.subject);
    t.equal(
      (await server.request(`/v1/intake/submissions/${body.id}?tenant_id=${tenant.tenantId}`, { token: admin.token }))
        .status,
      200,
    );
    t.equal(
      (await server.request(`/v1/intake/submissions/${body.id}`, { token: admin.token })).status,
      404,
      "without tenant_id it acts on its own tenant",
    );
    const unknown = await post(`/v1/intake/submit?tenant_id=0190aaaa-0000-7000-8000-000000000000`, pdf, admin.token);
    t.equal(unknown.status, 404, "an unregistered tenant is 404");
  });

  t.test("successful submissions record intake.submitted and intake.batch_submitted audit actions", async (t) => {
    const auditTenant = await createTestTenant(server.services);
    const single = (await (
      await post("/v1/intake/submit", pdf, auditTenant.token, { "X-Request-Id": "req-single-1" })
    ).json()) as Submission;
    const batch = (await (
      await post("/v1/intake/batch", { items: [pdf, pdf] }, auditTenant.token, { "X-Request-Id": "req-batch-1" })
    ).json()) as Submission;
    const records = (await runAdminCommand(server.services, "audit:list", { tenant: auditTenant.tenantId })) as Record<
      string,
      unknown
    >[];
    t.equal(records.length, 2);
    t.match(records[0], {
      action: "intake.submitted",
      tenant_id: auditTenant.tenantId,
      actor: auditTenant.subject,
      resource_id: single.id,
      request_id: "req-single-1",
    });
    t.match(records[1], { action: "intake.batch_submitted", resource_id: batch.id, request_id: "req-batch-1" });
    t.type(records[0]?.created_at, "string");
    const onlyBatch = (await runAdminCommand(server.services, "audit:list", {
      tenant: auditTenant.tenantId,
      action: "intake.batch_submitted",
    })) as unknown[];
    t.equal(onlyBatch.length, 1);
  });

  t.test("statuses move through the admin commands and polling shows them", async (t) => {
    const created = (await (
      await post("/v1/intake/batch", { items: [pdf, pdf, { ...pdf, mime_type: "application/zip" }] })
    ).json()) as Submission;
    const poll = async () =>
      (await (await server.request(`/v1/intake/submissions/${created.id}`, { token: tenant.token })).json()) as {
        submission: Submission;
        items: Item[];
      };
    const [first, second] = (await poll()).items as [Item, Item, Item];
    const documentId = "0190bbbb-0000-7000-8000-000000000001";

    await runAdminCommand(server.services, "item:link", {
      tenant: tenant.tenantId,
      item: first.id,
      "document-id": documentId,
    });
    let state = await poll();
    t.match(state.items[0], { status: "uploaded", document_id: documentId });
    t.equal(state.submission.status, "processing");

    await runAdminCommand(server.services, "item:status", {
      tenant: tenant.tenantId,
      item: first.id,
      status: "processing",
    });
    await runAdminCommand(server.services, "item:status", {
      tenant: tenant.tenantId,
      item: first.id,
      status: "completed",
    });
    await runAdminCommand(server.services, "item:status", {
      tenant: tenant.tenantId,
      item: second.id,
      status: "failed",
      error: "OCR failed",
    });
    state = await poll();
    t.match(state.items[1], { status: "failed", error_message: "OCR failed" });
    t.match(state.submission, { status: "completed_with_errors", accepted_count: 2, failed_count: 2 });

    await runAdminCommand(server.services, "item:status", {
      tenant: tenant.tenantId,
      item: second.id,
      status: "processing",
    });
    state = await poll();
    t.match(state.items[1], { status: "processing", error_message: null });
    t.equal(state.submission.status, "processing");
  });

  t.test("a batch whose accepted items all complete is completed", async (t) => {
    const created = (await (await post("/v1/intake/submit", pdf)).json()) as Submission;
    const [item] = (
      await (await server.request(`/v1/intake/submissions/${created.id}`, { token: tenant.token })).json()
    ).items as Item[];
    await runAdminCommand(server.services, "item:status", {
      tenant: tenant.tenantId,
      item: (item as Item).id,
      status: "processing",
    });
    const change = (await runAdminCommand(server.services, "item:status", {
      tenant: tenant.tenantId,
      item: (item as Item).id,
      status: "completed",
    })) as {
      submission: Submission;
      previous_status: string;
    };
    t.equal(change.previous_status, "processing");
    t.equal(change.submission.status, "completed");
  });

  t.test("the admin commands refuse impossible moves", async (t) => {
    const created = (await (
      await post("/v1/intake/batch", { items: [pdf, { ...pdf, mime_type: "application/zip" }] })
    ).json()) as Submission;
    const [accepted, rejected] = (
      await (await server.request(`/v1/intake/submissions/${created.id}`, { token: tenant.token })).json()
    ).items as [Item, Item];
    await t.rejects(
      runAdminCommand(server.services, "item:status", {
        tenant: tenant.tenantId,
        item: accepted.id,
        status: "completed",
      }),
      {
        name: "UsageError",
        message: /cannot move from pending to completed/,
      },
    );
    await t.rejects(
      runAdminCommand(server.services, "item:status", {
        tenant: tenant.tenantId,
        item: accepted.id,
        status: "rejected",
      }),
      {
        name: "UsageError",
      },
    );
    await t.rejects(
      runAdminCommand(server.services, "item:status", { tenant: tenant.tenantId, item: accepted.id, status: "bogus" }),
      {
        name: "UsageError",
      },
    );
    await t.rejects(
      runAdminCommand(server.services, "item:link", {
        tenant: tenant.tenantId,
        item: rejected.id,
        "document-id": "0190bbbb-0000-7000-8000-000000000002",
      }),
      { name: "UsageError" },
    );
    await t.rejects(
      runAdminCommand(server.services, "item:link", {
        tenant: tenant.tenantId,
        item: "0190bbbb-0000-7000-8000-00000000ffff",
        "document-id": "0190bbbb-0000-7000-8000-000000000002",
      }),
      { name: "UsageError", message: /does not exist/ },
    );
  });

  t.test("an item is addressed with its tenant: without it, or with another tenant, it is not found", async (t) => {
    const created = (await (await post("/v1/intake/submit", pdf)).json()) as Submission;
    const [item] = (
      await (await server.request(`/v1/intake/submissions/${created.id}`, { token: tenant.token })).json()
    ).items as [Item];
    await t.rejects(runAdminCommand(server.services, "item:status", { item: item.id, status: "processing" }), {
      name: "UsageError",
      message: "--tenant is required",
    });
    const other = await createTestTenant(server.services);
    await t.rejects(
      runAdminCommand(server.services, "item:status", { tenant: other.tenantId, item: item.id, status: "processing" }),
      { name: "UsageError", message: `item ${item.id} does not exist in tenant ${other.tenantId}` },
    );
    await t.rejects(
      runAdminCommand(server.services, "item:link", {
        tenant: other.tenantId,
        item: item.id,
        "document-id": "0190bbbb-0000-7000-8000-000000000003",
      }),
      { name: "UsageError", message: /does not exist in tenant/ },
    );
    const after = (await (
      await server.request(`/v1/intake/submissions/${created.id}`, { token: tenant.token })
    ).json()) as { items: Item[] };
    t.match(after.items[0], { status: "pending", document_id: null }, "the item is unchanged");
  });

  t.test("npm run admin prints the audit list as JSON", async (t) => {
    const output = await runAdminCli(server, [
      "audit:list",
      "--tenant",
      tenant.tenantId,
      "--action",
      "intake.submitted",
    ]);
    t.equal(output.code, 0);
    const records = JSON.parse(output.stdout) as { action: string }[];
    t.ok(records.length > 0);
    t.ok(records.every((record) => record.action === "intake.submitted"));
  });
});
