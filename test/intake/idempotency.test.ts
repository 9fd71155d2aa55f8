// The eight idempotency rules of the product specification, for both intake routes, including under concurrency.
// submitIntake in openapi/openapi.yaml states them as seven: its rule 6 holds rules 6 (scope) and 7 (expiry)
// here, its rule 7 rule 8 here (only 201s are remembered). A replay answers the very bytes of the first
// answer (the remembered body is stored as the text that was sent, not as jsonb, which reorders keys), for
// intake and for partner switch.
import t from "tap";
import pg from "pg";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";
import { startWorker } from "../../worker/runner.ts";
import { purgeExpiredKeys } from "../../db/idempotency.ts";
import { idempotencyLockKey } from "../../http/idempotency.ts";
import { waitFor } from "../helpers/wait.ts";
import { loadDocument } from "../../http/openapi-document.ts";

const pdf = { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf" };

async function counts(server: TestServer, tenantId: string): Promise<{ submissions: number; audits: number }> {
  const [submissions, audits] = await Promise.all(
    ["intake_submissions", "audit_actions"].map(async (table) =>
      Number(
        (
          await server.services
            .db(`integrator.${table}`)
            .where({ tenant_id: tenantId })
            .count<{ count: number }[]>("* as count")
            .first()
        )?.count ?? 0,
      ),
    ),
  );
  return { submissions: submissions ?? 0, audits: audits ?? 0 };
}

function submit(
  server: TestServer,
  tenant: TestTenant,
  key: string | undefined,
  json: unknown,
  path = "/v1/intake/submit",
) {
  return server.request(path, {
    method: "POST",
    token: tenant.token,
    json,
    headers: key === undefined ? {} : { "Idempotency-Key": key },
  });
}

/** The server of every case whose settings are the defaults. */
let server: TestServer;

t.before(async () => {
  server = await startTestServer(t);
});

t.test("idempotency rules", async (t) => {
  t.test("rule 1: the same key and the same body replays the stored 201; nothing new is created", async (t) => {
    const tenant = await createTestTenant(server.services);
    const first = await submit(server, tenant, "key-1", { ...pdf, external_reference: "r1" });
    t.equal(first.status, 201);
    const original = await first.json();
    // Key order does not matter: the fingerprint is over canonical JSON.
    const again = await submit(server, tenant, "key-1", {
      external_reference: "r1",
      mime_type: pdf.mime_type,
      file_size: pdf.file_size,
      filename: pdf.filename,
    });
    t.equal(again.status, 201);
    t.equal(again.headers.get("idempotent-replayed"), "true");
    t.same(await again.json(), original);
    t.same(await counts(server, tenant.tenantId), { submissions: 1, audits: 1 });
  });

  t.test("rule 2: the same key with a different body is 409 IDEMPOTENCY_KEY_MISMATCH", async (t) => {
    const tenant = await createTestTenant(server.services);
    t.equal((await submit(server, tenant, "key-2", pdf)).status, 201);
    const res = await submit(server, tenant, "key-2", { ...pdf, file_size: 1 });
    t.equal(res.status, 409);
    t.equal((await res.json()).error.code, "IDEMPOTENCY_KEY_MISMATCH");
    t.same(await counts(server, tenant.tenantId), { submissions: 1, audits: 1 });
  });

  t.test("rule 3: a call while the key is held is 409 IDEMPOTENCY_IN_PROGRESS with Retry-After", async (t) => {
    const tenant = await createTestTenant(server.services);
    // Hold the key's lock from another session, exactly as a running first call holds it.
    const holder = new pg.Client({ connectionString: server.databaseUrl });
    await holder.connect();
    t.teardown(() => holder.end());
    await holder.query("begin");
    await holder.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [
      idempotencyLockKey({ tenantId: tenant.tenantId, subject: tenant.subject, route: "intake.submit", key: "key-3" }),
    ]);
    const res = await submit(server, tenant, "key-3", pdf);
    t.equal(res.status, 409);
    t.equal(res.headers.get("retry-after"), "1");
    t.equal((await res.json()).error.code, "IDEMPOTENCY_IN_PROGRESS");
    await holder.query("rollback");
    t.equal(
      (await submit(server, tenant, "key-3", pdf)).status,
      201,
      "the caller's retry after the first call ends succeeds",
    );
  });

  t.test(
    "rule 3 under load: 20 concurrent identical requests create exactly one submission and one audit action",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => submit(server, tenant, "key-concurrent", pdf)),
      );
      const bodies = await Promise.all(responses.map((res) => res.json()));
      const created = responses.filter((res) => res.status === 201 && res.headers.get("idempotent-replayed") === null);
      const replayed = responses.filter(
        (res) => res.status === 201 && res.headers.get("idempotent-replayed") === "true",
      );
      const inProgress = bodies.filter(
        (body, i) => responses[i]?.status === 409 && body.error.code === "IDEMPOTENCY_IN_PROGRESS",
      );
      t.equal(created.length, 1, "one call created the submission");
      t.equal(
        created.length + replayed.length + inProgress.length,
        20,
        "every other answer is a replay or IDEMPOTENCY_IN_PROGRESS",
      );
      const ids = new Set(bodies.filter((body, i) => responses[i]?.status === 201).map((body) => body.id));
      t.equal(ids.size, 1, "every 201 carries the same submission");
      t.same(await counts(server, tenant.tenantId), { submissions: 1, audits: 1 });
    },
  );

  t.test("rule 1 under load: once the first call has finished, concurrent repeats are all replays", async (t) => {
    const tenant = await createTestTenant(server.services);
    t.equal((await submit(server, tenant, "key-replays", pdf)).status, 201);
    const responses = await Promise.all(Array.from({ length: 10 }, () => submit(server, tenant, "key-replays", pdf)));
    t.same(
      responses.map((res) => `${res.status} ${res.headers.get("idempotent-replayed")}`),
      Array.from({ length: 10 }, () => "201 true"),
    );
    await Promise.all(responses.map((res) => res.arrayBuffer()));
  });

  t.test(
    "rule 4: an empty key or one over 128 characters is 422 IDEMPOTENCY_KEY_INVALID, on both routes",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      for (const path of ["/v1/intake/submit", "/v1/intake/batch"]) {
        const json = path.endsWith("batch") ? { items: [pdf] } : pdf;
        for (const key of ["", "k".repeat(129)]) {
          const res = await submit(server, tenant, key, json, path);
          t.equal(res.status, 422, `${path} with a key of ${key.length}`);
          t.equal((await res.json()).error.code, "IDEMPOTENCY_KEY_INVALID");
        }
        t.equal((await submit(server, tenant, "k".repeat(128), json, path)).status, 201, "128 characters is accepted");
      }
      t.same(await counts(server, tenant.tenantId), { submissions: 2, audits: 2 });
    },
  );

  t.test("rule 5: without the header every call creates a new submission", async (t) => {
    const tenant = await createTestTenant(server.services);
    const a = await (await submit(server, tenant, undefined, pdf)).json();
    const b = await (await submit(server, tenant, undefined, pdf)).json();
    t.not(a.id, b.id);
    t.same(await counts(server, tenant.tenantId), { submissions: 2, audits: 2 });
  });

  t.test("rule 6: keys are scoped to tenant, calling user and route", async (t) => {
    const tenant = await createTestTenant(server.services);
    const other = await createTestTenant(server.services);
    const colleague = {
      ...tenant,
      subject: "colleague",
      token: (
        await server.services.tokens.issue({ subject: "colleague", tenantId: tenant.tenantId, roles: ["client_admin"] })
      ).token,
    };
    const first = await (await submit(server, tenant, "shared-key", pdf)).json();
    const otherTenant = await submit(server, other, "shared-key", pdf);
    t.equal(otherTenant.status, 201);
    t.equal(otherTenant.headers.get("idempotent-replayed"), null, "another tenant's key is another key");
    const otherUser = await submit(server, colleague, "shared-key", pdf);
    t.equal(otherUser.headers.get("idempotent-replayed"), null, "another user's key is another key");
    t.not((await otherUser.json()).id, first.id);
    const batch = await submit(server, tenant, "shared-key", { items: [pdf] }, "/v1/intake/batch");
    t.equal(batch.status, 201, "submit and batch are separate scopes (no mismatch)");
    t.equal(batch.headers.get("idempotent-replayed"), null);
  });

  t.test(
    "rule 6: the fingerprint covers the tenant acted on (platform_admin with another tenant_id is a mismatch)",
    async (t) => {
      const admin = await createTestTenant(server.services, ["platform_admin"]);
      const target = await createTestTenant(server.services);
      t.equal((await submit(server, admin, "admin-key", pdf, "/v1/intake/submit")).status, 201);
      const res = await submit(server, admin, "admin-key", pdf, `/v1/intake/submit?tenant_id=${target.tenantId}`);
      t.equal(res.status, 409);
      t.equal((await res.json()).error.code, "IDEMPOTENCY_KEY_MISMATCH");
    },
  );

  t.test("rule 8: a 422 is not remembered; the corrected body with the same key succeeds", async (t) => {
    const tenant = await createTestTenant(server.services);
    const bad = await submit(server, tenant, "key-8", { ...pdf, file_size: 0 });
    t.equal(bad.status, 422);
    const tooDeep = await submit(server, tenant, "key-8", {
      ...pdf,
      item_metadata: { a: { b: { c: { d: { e: { f: 1 } } } } } },
    });
    t.equal(tooDeep.status, 422, "a domain-level 422 is not remembered either");
    const good = await submit(server, tenant, "key-8", pdf);
    t.equal(good.status, 201);
    t.equal(good.headers.get("idempotent-replayed"), null);
  });

  t.test("rule 8: a request that fails (403) is not remembered", async (t) => {
    const tenant = await createTestTenant(server.services);
    const other = await createTestTenant(server.services);
    t.equal(
      (await submit(server, tenant, "key-403", pdf, `/v1/intake/submit?tenant_id=${other.tenantId}`)).status,
      403,
    );
    t.equal((await submit(server, tenant, "key-403", pdf)).status, 201);
  });
});

t.test(
  "keys are compared exactly as sent, byte for byte: a composed (NFC) and a decomposed (NFD) spelling are two keys, as the document says",
  async (t) => {
    const tenant = await createTestTenant(server.services);
    // Header values travel as bytes; Node hands them over one character per byte (latin1).
    const asSent = (key: string) => Buffer.from(key, "utf8").toString("latin1");
    const composed = asSent("clé-1".normalize("NFC"));
    const decomposed = asSent("clé-1".normalize("NFD"));
    t.not(composed, decomposed, "two byte sequences");
    const first = await submit(server, tenant, composed, { ...pdf, external_reference: "nfc" });
    t.equal(first.status, 201);
    const firstBody = (await first.json()) as { id: string };
    const replay = await submit(server, tenant, composed, { ...pdf, external_reference: "nfc" });
    t.equal(replay.headers.get("idempotent-replayed"), "true", "the same bytes replay");
    const other = await submit(server, tenant, decomposed, { ...pdf, external_reference: "nfd" });
    t.equal(other.status, 201, "the other normalisation is another key: a different body is no mismatch");
    t.not(((await other.json()) as { id: string }).id, firstBody.id);
    t.equal((await counts(server, tenant.tenantId)).submissions, 2);
    const caseVariant = await submit(server, tenant, composed.toUpperCase(), { ...pdf, external_reference: "case" });
    t.equal(caseVariant.status, 201, "nor is case folded");

    const document = loadDocument() as unknown as {
      components: { parameters: Record<string, { name: string; description: string }> };
    };
    const parameter = Object.values(document.components.parameters).find((p) => p.name === "Idempotency-Key");
    t.match(parameter?.description, /exactly as sent, byte for byte/);
    t.match(parameter?.description, /NFC/);
  },
);

// Keys jsonb would reorder (it sorts by length, then bytes) and text it would re-render (escapes, spaces).
const metadata = { zebra: 1, a: { yy: "\u00e9", b: [1, 2.5, { dd: null, c: true }] }, "mid length": "x" };

t.test("idempotent replays are byte-identical", async (t) => {
  const tenant = await createTestTenant(server.services);

  const twice = async (path: string, body: unknown, key: string) => {
    const send = () =>
      server.request(path, { method: "POST", token: tenant.token, json: body, headers: { "Idempotency-Key": key } });
    const first = await send();
    const firstText = await first.text();
    const replay = await send();
    const replayText = await replay.text();
    return { first, firstText, replay, replayText };
  };

  t.test("an intake submit replay returns the first answer's exact bytes", async (t) => {
    const { first, firstText, replay, replayText } = await twice(
      "/v1/intake/submit",
      { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf", item_metadata: metadata },
      "bytes-submit",
    );
    t.equal(first.status, 201);
    t.equal(replay.status, 201);
    t.equal(replay.headers.get("idempotent-replayed"), "true");
    t.equal(replay.headers.get("content-type"), first.headers.get("content-type"));
    t.equal(replayText, firstText);
  });

  t.test("a keyed first answer is the submission as read back, byte for byte (created_at included)", async (t) => {
    // The first keyed answer is written by the database statement that remembers it; it must be the
    // very text an unkeyed answer or a read would give for the same row.
    const { first, firstText } = await twice(
      "/v1/intake/batch",
      {
        items: [{ filename: "a.pdf", file_size: 1, mime_type: "application/pdf" }],
        external_reference: 'quote " and \u00e9 and \u2028',
        module: "m",
      },
      "bytes-read-back",
    );
    t.equal(first.status, 201);
    const { id } = JSON.parse(firstText) as { id: string };
    const read = await server.request(`/v1/intake/submissions/${id}`, { token: tenant.token });
    const { submission } = (await read.json()) as { submission: { created_at: string } };
    t.equal(firstText, JSON.stringify(submission));
    t.match(submission.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  t.test("an intake batch replay returns the first answer's exact bytes", async (t) => {
    const item = { filename: "a.pdf", file_size: 1, mime_type: "application/pdf", item_metadata: metadata };
    const { first, firstText, replay, replayText } = await twice(
      "/v1/intake/batch",
      { items: [item, { ...item, filename: "b.pdf" }], external_reference: "batch-1" },
      "bytes-batch",
    );
    t.equal(first.status, 201);
    t.equal(replay.headers.get("idempotent-replayed"), "true");
    t.equal(replayText, firstText);
  });

  t.test("a partner switch replay returns the first answer's exact bytes", async (t) => {
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const { first, firstText, replay, replayText } = await twice(
      "/v1/partner-switch",
      { target_partner_key: partner.partnerKey, context_values: { plan: "gold", employee_id: "e-1" } },
      "bytes-switch",
    );
    t.equal(first.status, 200);
    t.equal(replay.headers.get("idempotent-replayed"), "true");
    t.equal(replay.headers.get("x-correlation-id"), first.headers.get("x-correlation-id"));
    t.equal(replayText, firstText);
  });
});

t.test("rule 7: keys expire after API_IDEMPOTENCY_TTL_HOURS and the purge job removes them", async (t) => {
  // 0.0015 hours is 5.4 seconds: long enough for the replay below on a loaded machine, short enough to wait out.
  const server = await startTestServer(t, { env: { API_IDEMPOTENCY_TTL_HOURS: "0.0015" } });
  const tenant = await createTestTenant(server.services);
  t.equal((await submit(server, tenant, "short-lived", pdf)).status, 201);
  const row = await server.services
    .db("integrator.idempotency_keys")
    .where({ tenant_id: tenant.tenantId })
    .first(server.services.db.raw("extract(epoch from expires_at - created_at)::float8 as ttl"));
  t.ok(Math.abs(Number(row?.ttl) - 5.4) < 0.01, `the key lives 5.4 s (${row?.ttl})`);
  t.equal(
    (await submit(server, tenant, "short-lived", pdf)).headers.get("idempotent-replayed"),
    "true",
    "replayed while alive",
  );

  // Wait on the database clock (the one expiry is judged by) rather than a fixed sleep.
  const expired = async () =>
    (
      await server.services.db.raw<{ rows: { expired: boolean }[] }>(
        "select bool_and(expires_at <= now()) as expired from integrator.idempotency_keys where tenant_id = ?",
        [tenant.tenantId],
      )
    ).rows[0]?.expired === true;
  t.ok(
    await waitFor(expired, (done) => done, { seconds: 20, intervalMs: 100 }),
    "the key expired on the database clock",
  );
  const after = await submit(server, tenant, "short-lived", { ...pdf, file_size: 7 });
  t.equal(after.status, 201, "an expired key is free again: a different body is not a mismatch");
  t.equal(after.headers.get("idempotent-replayed"), null);

  // The purge job, run by the real worker, removes what has expired.
  await server.services.db.raw(
    "update integrator.idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = ?",
    [tenant.tenantId],
  );
  const worker = await startWorker(server.services, server.databaseUrl, { pollInterval: 100 });
  t.teardown(() => worker.stop());
  await worker.runner.addJob("purge_idempotency_keys", {});
  const remaining = async () =>
    Number(
      (
        await server.services
          .db("integrator.idempotency_keys")
          .where({ tenant_id: tenant.tenantId })
          .count<{ count: number }[]>("* as count")
          .first()
      )?.count ?? 0,
    );
  const left = await waitFor(remaining, (count) => count === 0, { seconds: 15, intervalMs: 100 });
  t.equal(left, 0, "purge_idempotency_keys removed the expired keys");
  t.equal(await purgeExpiredKeys(server.services.db), 0, "nothing is left to purge");
});
