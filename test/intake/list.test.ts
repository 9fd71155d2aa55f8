// listIntakeSubmissions: the tenant's submissions newest first in keyset pages, filtered by status,
// external reference and creation time; another tenant's never show; each page is an index range scan.
import t from "tap";
import { createTestTenant, startTestServer, type TestTenant } from "../helpers/server.ts";
import { submissionsPageQuery } from "../../db/intake.ts";
import type { components } from "../../generated/openapi.ts";
import { assertIndexRangeScans, pastKeyset } from "../helpers/keyset-plans.ts";

type Submission = components["schemas"]["IntakeSubmissionResponse"];
type Page = components["schemas"]["IntakeSubmissionListResponse"];

const pdf = { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf" };

/** A cursor of the form this list hands out, naming `createdAt`. */
const forgedCursor = (createdAt: string) =>
  Buffer.from(JSON.stringify({ c: createdAt, i: "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69" })).toString("base64url");

t.test("listing submissions", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const submit = async (who: TestTenant, body: Record<string, unknown>): Promise<Submission> => {
    const res = await server.request("/v1/intake/submit", { method: "POST", token: who.token, json: body });
    t.equal(res.status, 201);
    return (await res.json()) as Submission;
  };
  const list = async (query: Record<string, string>, who: TestTenant = tenant) => {
    const res = await server.request(`/v1/intake/submissions?${new URLSearchParams(query)}`, { token: who.token });
    return { status: res.status, body: (await res.json()) as Page & { detail?: { loc: unknown[]; type: string }[] } };
  };

  const created: Submission[] = [];
  for (let i = 0; i < 7; i++) created.push(await submit(tenant, { ...pdf, external_reference: `ref-${i % 3}` }));
  const rejected = await submit(tenant, { ...pdf, mime_type: "application/x-msdownload", external_reference: "bad" });
  created.push(rejected);
  const newestFirst = [...created].reverse().map((submission) => submission.id);

  t.test("newest first, in keyset pages that together hold every submission once", async (t) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const { status, body } = await list({ limit: "3", ...(cursor === null ? {} : { cursor }) });
      t.equal(status, 200);
      t.ok(body.submissions.length <= 3);
      seen.push(...body.submissions.map((submission) => submission.id));
      cursor = body.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);
    t.same(seen, newestFirst, "every submission once, newest first");
    t.equal(pages, 3, "8 submissions in pages of 3");
  });

  t.test("a page shows submissions as getIntakeSubmission does, without items", async (t) => {
    const { body } = await list({ limit: "1" });
    const [first] = body.submissions;
    t.same(first, created.at(-1), "the newest, field for field as answered at creation");
    t.type(body.next_cursor, "string");
  });

  t.test("submissions created meanwhile do not shift the next page", async (t) => {
    const first = await list({ limit: "4" });
    await submit(tenant, { ...pdf, external_reference: "meanwhile" });
    const second = await list({ limit: "4", cursor: first.body.next_cursor ?? "" });
    t.same(
      second.body.submissions.map((submission) => submission.id),
      newestFirst.slice(4, 8),
      "the page after the cursor is unchanged",
    );
  });

  t.test("filters: status, external_reference (exact), created_after and created_before", async (t) => {
    const byStatus = await list({ status: "rejected" });
    t.same(
      byStatus.body.submissions.map((submission) => submission.id),
      [rejected.id],
      "status rejected: the one whose only item was refused",
    );
    const byReference = await list({ external_reference: "ref-1" });
    t.same(
      byReference.body.submissions.map((submission) => submission.external_reference),
      ["ref-1", "ref-1"],
      "ref-1 exactly",
    );
    t.same((await list({ external_reference: "ref" })).body.submissions, [], "no prefix match");
    const middle = created[3] as Submission;
    const after = await list({ created_after: middle.created_at, limit: "200" });
    t.ok(
      after.body.submissions.every((submission) => Date.parse(submission.created_at) > Date.parse(middle.created_at)),
      "created_after is exclusive",
    );
    const before = await list({ created_before: middle.created_at, limit: "200" });
    t.ok(
      before.body.submissions.every((submission) => Date.parse(submission.created_at) < Date.parse(middle.created_at)),
      "created_before is exclusive",
    );
    // RFC 3339 allows offsets to ±23:59, PostgreSQL reads them to ±15:59 only: the bound is the instant named.
    const shifted = new Date(Date.parse(middle.created_at) + 20 * 3600_000).toISOString().replace("Z", "+20:00");
    t.same(
      (await list({ created_after: shifted, limit: "200" })).body.submissions.map((submission) => submission.id),
      after.body.submissions.map((submission) => submission.id),
      "created_after with an offset of +20:00 is the same instant",
    );
    t.equal(
      after.body.submissions.length + before.body.submissions.length,
      (await list({ limit: "200" })).body.submissions.length -
        (await list({ limit: "200" })).body.submissions.filter(
          (submission) => submission.created_at === middle.created_at,
        ).length,
      "every submission but those of that millisecond is on one side",
    );
  });

  t.test("another tenant's submissions never show; a platform_admin may name the tenant", async (t) => {
    const other = await createTestTenant(server.services);
    await submit(other, { ...pdf, external_reference: "other" });
    t.same(
      (await list({ limit: "200" })).body.submissions.filter((submission) => submission.tenant_id !== tenant.tenantId),
      [],
    );
    t.same(
      (await list({ limit: "200" }, other)).body.submissions.map((submission) => submission.external_reference),
      ["other"],
    );
    t.equal((await list({ tenant_id: other.tenantId })).status, 403, "a client_admin names only its own tenant");
    const admin = await createTestTenant(server.services, ["platform_admin"]);
    const named = await list({ tenant_id: tenant.tenantId, limit: "200" }, admin);
    t.equal(named.status, 200);
    t.ok(named.body.submissions.length >= 8);
  });

  t.test("bad parameters answer 422 at their location", async (t) => {
    for (const [query, loc, type] of [
      [{ cursor: "garbage" }, ["query", "cursor"], "value_error"],
      [{ limit: "0" }, ["query", "limit"], "greater_than_equal"],
      [{ limit: "201" }, ["query", "limit"], "less_than_equal"],
      [{ status: "done" }, ["query", "status"], "enum"],
      [{ created_after: "yesterday" }, ["query", "created_after"], undefined],
      // Of the form the date-time format checks, but no instant: PostgreSQL refused them with a 500.
      [{ created_after: "2026-02-30T00:00:00Z" }, ["query", "created_after"], "value_error"],
      [{ created_before: "0000-01-01T00:00:00Z" }, ["query", "created_before"], "value_error"],
      [{ created_after: "2026-01-01T00:00:00+99:00" }, ["query", "created_after"], "value_error"],
      [{ created_before: "2026-01-01T25:00:00Z" }, ["query", "created_before"], "value_error"],
      [{ cursor: forgedCursor("2026-02-30T00:00:00.000000Z") }, ["query", "cursor"], "value_error"],
      [{ cursor: forgedCursor("0000-01-01T00:00:00.000000Z") }, ["query", "cursor"], "value_error"],
      [{ external_reference: "ref\u0000" }, ["query", "external_reference"], "value_error"],
      // An empty value of a declared parameter is refused as missing (CHANGELOG, unknown inputs).
      [{ external_reference: "" }, ["query", "external_reference"], "missing"],
    ] as const) {
      const { status, body } = await list(query);
      t.equal(status, 422, JSON.stringify(query));
      t.same(body.detail?.[0]?.loc, loc, JSON.stringify(query));
      if (type !== undefined) t.equal(body.detail?.[0]?.type, type, JSON.stringify(query));
    }
  });

  t.test(
    "each page query is an index range scan with tenant_id leading, without a sort, whatever the filter",
    async (t) => {
      const db = server.services.db;
      for (const who of [tenant, await createTestTenant(server.services)])
        await db.raw(
          `insert into integrator.intake_submissions
           (tenant_id, kind, external_reference, item_count, accepted_count, failed_count, status, created_by, created_at)
         select ?, 'single', 'ref-' || (g % 1000), 1, 1, 0,
                case when g % 7 = 0 then 'rejected' else 'received' end, 'test', now() - make_interval(secs => g)
           from generate_series(1, 20000) g`,
          [who.tenantId],
        );
      await db.raw("analyze integrator.intake_submissions");
      const cursor = pastKeyset();
      const pages = {
        newest: { limit: 50 },
        "after a cursor": { limit: 50, after: cursor },
        "by status": { limit: 50, status: "rejected" as const },
        "by external reference": { limit: 50, externalReference: "ref-7" },
        "by time range": { limit: 50, createdBefore: new Date(Date.now() - 3_600_000).toISOString() },
      };
      await assertIndexRangeScans(
        t,
        db,
        "intake_submissions_",
        Object.fromEntries(
          Object.entries(pages).map(([name, request]) => [name, submissionsPageQuery(db, tenant.tenantId, request)]),
        ),
      );
    },
  );
});
