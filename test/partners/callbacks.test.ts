// POST /v1/callbacks/partner/{partner_key}: shape first, then the HMAC signature from the first present
// of header, query and body; one answer for every attribution failure; 202 exactly once per event; 503
// with Retry-After for a paused partner or an unreachable database (receivePartnerCallback in
// openapi/openapi.yaml; docs/decisions.md §7).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import t from "tap";
import { createTestTenant, startTestServer, type TestServer } from "../helpers/server.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { createTestPartner, signCallback, type TestPartner } from "../helpers/partners.ts";
import { CALLBACK_REJECTED } from "../../handlers/partners/callbacks.ts";
import { changePartnerStatus, entitlePartner } from "../../handlers/partners/registry.ts";
import { listAudit } from "../../db/audit.ts";
import { databaseRelay } from "../helpers/database-relay.ts";

interface CallbackBody {
  tenant_id: string;
  payload: Record<string, unknown>;
  signature?: string;
}

function callback(
  server: TestServer,
  partnerKey: string,
  body: unknown,
  options: { header?: string; query?: string } = {},
) {
  const query = options.query === undefined ? "" : `?signature=${encodeURIComponent(options.query)}`;
  return server.request(`/v1/callbacks/partner/${encodeURIComponent(partnerKey)}${query}`, {
    method: "POST",
    json: body,
    headers: options.header === undefined ? {} : { "X-Callback-Signature": options.header },
  });
}

async function callbackRows(
  server: TestServer,
  tenantId: string,
): Promise<{ id: string; event: string; payload: unknown }[]> {
  return server.services
    .db("integrator.partner_callbacks")
    .where({ tenant_id: tenantId })
    .orderBy("received_at")
    .select("id", "event", "payload");
}

// The Python partner's recipe, with values fixed so the expected digests could be computed once with
//   python3 -c 'import json,hmac,hashlib; obj={...}; msg=json.dumps(obj, sort_keys=True, separators=(",", ":")); print(hmac.new(SECRET.encode(), msg.encode(), hashlib.sha256).hexdigest())'
// (and again with ensure_ascii=False for the UTF-8 digest).
const PYTHON_TENANT = "01930a6e-7c2d-7b4e-9f10-2a3b4c5d6e7f";
const PYTHON_PARTNER = "acme-hr";
const PYTHON_SECRET = "pcs_fixed-secret-for-the-python-recipe";
const PYTHON_PAYLOAD = {
  event: "employee.updated",
  event_id: "evt-ü-1",
  data: { name: "Zoë Ångström", city: "Zürich", note: "東京 ✓ 😀", count: 3, active: true, tags: ["a", "b"] },
};
const PYTHON_ASCII_HMAC = "eaf6c20cb7203aedbe9fb718a60bacfb3386644350f6075314db5b41208a3869";
const PYTHON_UTF8_HMAC = "b5cb21612ce39331a9d4611db349e000145d6ea80bafc61038384a8f76eb4e82";

t.test("partner callbacks", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
  let sequence = 0;
  /** A new event of `partner` for `tenant`, signed (UTF-8) unless told otherwise. */
  const event = (
    overrides: Partial<CallbackBody> = {},
    signer: TestPartner = partner,
  ): CallbackBody & { signature: string } => {
    sequence += 1;
    const body = {
      tenant_id: tenant.tenantId,
      payload: { event: "user.provisioned", event_id: `evt-${sequence}-${Date.now()}` },
      ...overrides,
    };
    return { ...body, signature: signCallback(signer.callbackSecret, partner.partnerKey, body) };
  };

  t.test(
    "a signature computed the way a Python partner computes it (ASCII-escaped JSON) over non-ASCII text is accepted",
    async (t) => {
      await server.services.db("integrator.tenants").insert({ id: PYTHON_TENANT, name: "Python partner tenant" });
      await server.services.db("integrator.partners").insert({
        partner_key: PYTHON_PARTNER,
        name: "ACME HR",
        launch_url: "https://acme-hr.example.com/launch",
        context_keys: [],
        callback_secret_encrypted: server.services.secretBox.seal(PYTHON_SECRET),
      });
      await entitlePartner(server.services, PYTHON_TENANT, PYTHON_PARTNER);
      const res = await callback(
        server,
        PYTHON_PARTNER,
        { tenant_id: PYTHON_TENANT, payload: PYTHON_PAYLOAD },
        { header: PYTHON_ASCII_HMAC },
      );
      t.equal(res.status, 202);
      t.match(await res.json(), { status: "accepted", duplicate: false });
    },
  );

  t.test("the UTF-8 serialisation's signature is accepted too", async (t) => {
    const payload = { ...PYTHON_PAYLOAD, event_id: "evt-ü-2" };
    t.equal(
      signCallback(PYTHON_SECRET, PYTHON_PARTNER, { tenant_id: PYTHON_TENANT, payload: PYTHON_PAYLOAD }),
      PYTHON_UTF8_HMAC,
      "our UTF-8 canonical form is Python's ensure_ascii=False one",
    );
    t.equal(
      signCallback(
        PYTHON_SECRET,
        PYTHON_PARTNER,
        { tenant_id: PYTHON_TENANT, payload: PYTHON_PAYLOAD },
        { asciiOnly: true },
      ),
      PYTHON_ASCII_HMAC,
      "and our ASCII one is Python's default",
    );
    // Over the wire, with the digest Python computed with ensure_ascii=False.
    const fresh = await callback(
      server,
      PYTHON_PARTNER,
      { tenant_id: PYTHON_TENANT, payload: PYTHON_PAYLOAD },
      { header: PYTHON_UTF8_HMAC },
    );
    t.equal(fresh.status, 202);
    t.equal((await fresh.json()).duplicate, true, "the same event as the ASCII-signed one");
    const other = await callback(
      server,
      PYTHON_PARTNER,
      { tenant_id: PYTHON_TENANT, payload },
      { header: signCallback(PYTHON_SECRET, PYTHON_PARTNER, { tenant_id: PYTHON_TENANT, payload }) },
    );
    t.equal(other.status, 202);
    t.equal((await other.json()).duplicate, false);
  });

  t.test("a sha256= prefix and upper-case hex are accepted", async (t) => {
    const { signature, ...body } = event();
    t.equal((await callback(server, partner.partnerKey, body, { header: `sha256=${signature}` })).status, 202);
    const second = event();
    t.equal(
      (
        await callback(
          server,
          partner.partnerKey,
          { tenant_id: second.tenant_id, payload: second.payload },
          { header: second.signature.toUpperCase() },
        )
      ).status,
      202,
    );
  });

  t.test(
    "success is 202 {status: accepted, callback_id, duplicate: false}; the event is stored and audited as partner.callback_received",
    async (t) => {
      const { signature, ...body } = event({
        payload: { event: "user.deprovisioned", event_id: "evt-stored", user: { id: 7 } },
      });
      const res = await server.request(`/v1/callbacks/partner/${partner.partnerKey}`, {
        method: "POST",
        json: body,
        headers: { "X-Callback-Signature": signature, "X-Request-Id": "req-cb-1" },
      });
      t.equal(res.status, 202);
      const receipt = await res.json();
      t.same(Object.keys(receipt).sort(), ["callback_id", "duplicate", "status"]);
      t.equal(receipt.status, "accepted");
      t.equal(receipt.duplicate, false);
      const row = (await callbackRows(server, tenant.tenantId)).find((entry) => entry.id === receipt.callback_id);
      t.match(row, { event: "user.deprovisioned", payload: body.payload });
      const audit = (await listAudit(server.services.db, tenant.tenantId, "partner.callback_received")).find(
        (entry) => entry.resource_id === receipt.callback_id,
      );
      t.match(audit, {
        actor: `partner:${partner.partnerKey}`,
        resource_type: "partner_callback",
        request_id: "req-cb-1",
        details: { partner_key: partner.partnerKey, event: "user.deprovisioned" },
      });
    },
  );

  t.test("no bearer token is needed: the signature authenticates", async (t) => {
    const { signature, ...body } = event();
    const res = await callback(server, partner.partnerKey, body, { header: signature });
    t.equal(res.status, 202);
    t.equal(res.headers.get("www-authenticate"), null);
  });

  t.test("signature precedence: the header wins over the query parameter and the body field", async (t) => {
    const body = event();
    const res = await callback(
      server,
      partner.partnerKey,
      { ...body, signature: "00".repeat(32) },
      { header: body.signature, query: "11".repeat(32) },
    );
    t.equal(res.status, 202, "a right header with a wrong query and body signature is accepted");
  });

  t.test("signature precedence: a wrong header with a right body signature is rejected", async (t) => {
    const body = event();
    const res = await callback(server, partner.partnerKey, body, { header: "00".repeat(32) });
    t.equal(res.status, 400);
    t.equal((await res.json()).error.code, "CALLBACK_SIGNATURE_INVALID");
  });

  t.test("signature precedence: a wrong header with a right query signature is rejected", async (t) => {
    const { signature, ...body } = event();
    const res = await callback(server, partner.partnerKey, body, { header: "00".repeat(32), query: signature });
    t.equal(res.status, 400);
    t.equal((await res.json()).error.code, "CALLBACK_SIGNATURE_INVALID");
  });

  t.test("signature precedence: without the header the query parameter wins over the body field", async (t) => {
    const right = event();
    t.equal(
      (await callback(server, partner.partnerKey, { ...right, signature: "00".repeat(32) }, { query: right.signature }))
        .status,
      202,
      "a right query with a wrong body signature is accepted",
    );
    const wrongQuery = event();
    const res = await callback(server, partner.partnerKey, wrongQuery, { query: "00".repeat(32) });
    t.equal(res.status, 400, "a wrong query with a right body signature is rejected");
    t.equal((await res.json()).error.code, "CALLBACK_SIGNATURE_INVALID");
  });

  t.test("signature precedence: an empty header or query signature is present, wins and is rejected", async (t) => {
    const body = event();
    for (const options of [{ header: "" }, { query: "" }]) {
      const res = await callback(server, partner.partnerKey, body, options);
      t.equal(res.status, 400, JSON.stringify(options));
      t.equal((await res.json()).error.code, "CALLBACK_SIGNATURE_INVALID");
    }
  });

  t.test(
    "signature precedence: the body field is used when neither header nor query parameter is present",
    async (t) => {
      t.equal((await callback(server, partner.partnerKey, event())).status, 202);
    },
  );

  t.test(
    "every attribution failure is 400 CALLBACK_SIGNATURE_INVALID with the same message: missing or wrong signature, unknown or impossible partner, unentitled tenant, non-UUID tenant_id",
    async (t) => {
      const stranger = await createTestTenant(server.services);
      const otherPartner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      const unsigned = event();
      const cases: [string, Promise<Response>][] = [
        [
          "missing signature",
          callback(server, partner.partnerKey, { tenant_id: unsigned.tenant_id, payload: unsigned.payload }),
        ],
        ["wrong signature", callback(server, partner.partnerKey, { ...event(), signature: "ab".repeat(32) })],
        [
          "a signature that is not hex",
          callback(server, partner.partnerKey, { ...event(), signature: "not-a-signature" }),
        ],
        ["another partner's secret", callback(server, partner.partnerKey, event({}, otherPartner))],
        ["a signature over another partner key", callback(server, otherPartner.partnerKey, event())],
        ["unknown partner", callback(server, "no-such-partner", event())],
        // PostgreSQL refuses a NUL in a statement's text: such a key is looked up nowhere.
        ["a partner key no partner can have (a NUL in it)", callback(server, `${partner.partnerKey}\u0000`, event())],
        ["tenant not entitled", callback(server, partner.partnerKey, event({ tenant_id: stranger.tenantId }))],
        [
          "tenant that does not exist",
          callback(server, partner.partnerKey, event({ tenant_id: "00000000-0000-4000-8000-000000000000" })),
        ],
        ["non-UUID tenant_id", callback(server, partner.partnerKey, event({ tenant_id: "acme" }))],
      ];
      const errors = new Set<string>();
      for (const [what, pending] of cases) {
        const res = await pending;
        t.equal(res.status, 400, what);
        const body = await res.json();
        t.same(Object.keys(body.error).sort(), ["code", "message"], `${what}: no details`);
        errors.add(JSON.stringify(body.error));
      }
      t.same(
        [...errors],
        [JSON.stringify({ code: "CALLBACK_SIGNATURE_INVALID", message: CALLBACK_REJECTED })],
        "one code and one message for all of them",
      );
      t.same(await callbackRows(server, stranger.tenantId), [], "nothing stored");
    },
  );

  const malformed: [string, unknown][] = [
    ["no tenant_id", { payload: { event: "x" } }],
    ["a tenant_id that is not a string", { tenant_id: 42, payload: { event: "x" } }],
    ["no payload", { tenant_id: "t" }],
    ["a payload that is not an object", { tenant_id: "t", payload: ["event", "x"] }],
    ["a payload without event", { tenant_id: "t", payload: { id: 1 } }],
    ["a payload.event that is not a string", { tenant_id: "t", payload: { event: 7 } }],
    ["a body that is not an object", [1, 2]],
  ];
  for (const [what, body] of malformed) {
    t.test(`shape first: ${what} is 400 CALLBACK_PAYLOAD_INVALID, even without a signature`, async (t) => {
      const res = await callback(server, partner.partnerKey, body);
      t.equal(res.status, 400);
      const answer = await res.json();
      t.equal(answer.error.code, "CALLBACK_PAYLOAD_INVALID");
      t.type(answer.request_id, "string");
    });
  }

  t.test("shape first: a malformed JSON body is 400 CALLBACK_PAYLOAD_INVALID", async (t) => {
    const res = await server.request(`/v1/callbacks/partner/${partner.partnerKey}`, {
      method: "POST",
      body: '{"tenant_id": ',
      headers: { "Content-Type": "application/json", "X-Callback-Signature": "00" },
    });
    t.equal(res.status, 400);
    const answer = await res.json();
    t.equal(answer.error.code, "CALLBACK_PAYLOAD_INVALID");
    t.equal(answer.error.details.errors[0].type, "json_invalid");
  });

  t.test("shape first: a payload nested deeper than 32 levels is 400 CALLBACK_PAYLOAD_INVALID", async (t) => {
    let nested: Record<string, unknown> = { leaf: true };
    for (let depth = 0; depth < 40; depth++) nested = { nested };
    const res = await callback(server, partner.partnerKey, {
      tenant_id: tenant.tenantId,
      payload: { event: "deep", nested },
      signature: "00",
    });
    t.equal(res.status, 400);
    t.equal((await res.json()).error.code, "CALLBACK_PAYLOAD_INVALID");
  });

  t.test(
    "shape first: a payload nested 30 000 levels deep (no signature needed to send it; within the 64 KiB body limit) is a quick 400, never a stuck CPU",
    async (t) => {
      const depth = 30_000;
      const started = performance.now();
      const res = await server.request(`/v1/callbacks/partner/${partner.partnerKey}`, {
        method: "POST",
        body: `{"tenant_id":"${tenant.tenantId}","payload":{"event":"deep","n":${"[".repeat(depth)}${"]".repeat(depth)}}}`,
        headers: { "Content-Type": "application/json" },
      });
      t.equal(res.status, 400);
      t.equal((await res.json()).error.code, "CALLBACK_PAYLOAD_INVALID");
      t.ok(performance.now() - started < 10_000, `answered in ${Math.round(performance.now() - started)} ms`);
    },
  );

  t.test(
    "the same event_id again is acknowledged with duplicate: true and the same callback_id, and processed once",
    async (t) => {
      const body = event({ payload: { event: "user.updated", event_id: "evt-dup-1", attempt: 1 } });
      const first = await (await callback(server, partner.partnerKey, body)).json();
      // A retry, even with other payload fields, is the same event.
      const retry = event({ payload: { event: "user.updated", event_id: "evt-dup-1", attempt: 2 } });
      const res = await callback(server, partner.partnerKey, retry);
      t.equal(res.status, 202);
      t.same(await res.json(), { status: "accepted", callback_id: first.callback_id, duplicate: true });
      t.equal(
        (await callbackRows(server, tenant.tenantId)).filter((row) => row.id === first.callback_id).length,
        1,
        "one stored row",
      );
      t.equal(
        (await listAudit(server.services.db, tenant.tenantId, "partner.callback_received")).filter(
          (entry) => entry.resource_id === first.callback_id,
        ).length,
        1,
        "one audit action",
      );
      t.match(
        (await callbackRows(server, tenant.tenantId)).find((row) => row.id === first.callback_id)?.payload,
        { attempt: 1 },
        "the first one is kept",
      );
    },
  );

  t.test("without event_id, payload.id identifies the event", async (t) => {
    const first = await (
      await callback(server, partner.partnerKey, event({ payload: { event: "order.paid", id: 9001, at: "10:00" } }))
    ).json();
    const again = await (
      await callback(server, partner.partnerKey, event({ payload: { event: "order.paid", id: 9001, at: "10:01" } }))
    ).json();
    t.same([again.duplicate, again.callback_id], [true, first.callback_id]);
    const otherId = await (
      await callback(server, partner.partnerKey, event({ payload: { event: "order.paid", id: "9001" } }))
    ).json();
    t.equal(otherId.duplicate, false, 'the string "9001" is another id than the number 9001');
  });

  t.test("without event_id or id, a hash of the signed body identifies the event", async (t) => {
    const payload = { event: "heartbeat", at: "2026-01-01T00:00:00Z" };
    const first = await (await callback(server, partner.partnerKey, event({ payload }))).json();
    const same = await (
      await callback(server, partner.partnerKey, event({ payload: { at: payload.at, event: payload.event } }))
    ).json();
    t.same(
      [same.duplicate, same.callback_id],
      [true, first.callback_id],
      "the identical body (in any key order) is a duplicate",
    );
    const different = await (
      await callback(server, partner.partnerKey, event({ payload: { ...payload, at: "2026-01-01T00:00:01Z" } }))
    ).json();
    t.equal(different.duplicate, false);
  });

  t.test(
    "event ids are per tenant and partner: the same event_id from another entitled tenant is a new event",
    async (t) => {
      const second = await createTestTenant(server.services);
      await entitlePartner(server.services, second.tenantId, partner.partnerKey);
      const payload = { event: "user.updated", event_id: "evt-shared" };
      const first = await (await callback(server, partner.partnerKey, event({ payload }))).json();
      const other = await (
        await callback(server, partner.partnerKey, event({ tenant_id: second.tenantId, payload }))
      ).json();
      t.equal(first.duplicate, false);
      t.equal(other.duplicate, false);
      t.not(other.callback_id, first.callback_id);
    },
  );

  t.test("concurrent deliveries of one event are stored once and audited once", async (t) => {
    const body = event({ payload: { event: "user.updated", event_id: "evt-concurrent" } });
    const responses = await Promise.all(Array.from({ length: 10 }, () => callback(server, partner.partnerKey, body)));
    const receipts = await Promise.all(responses.map((res) => res.json()));
    t.same(
      responses.map((res) => res.status),
      Array.from({ length: 10 }, () => 202),
    );
    t.equal(receipts.filter((receipt) => receipt.duplicate === false).length, 1, "one is new, the rest are duplicates");
    t.equal(new Set(receipts.map((receipt) => receipt.callback_id)).size, 1);
    const [row] = await server.services
      .db("integrator.partner_callbacks")
      .where({ tenant_id: tenant.tenantId, id: receipts[0].callback_id })
      .select("id");
    t.ok(row);
    t.equal(
      (await listAudit(server.services.db, tenant.tenantId, "partner.callback_received")).filter(
        (entry) => entry.resource_id === receipts[0].callback_id,
      ).length,
      1,
    );
  });

  t.test(
    "a paused partner answers a correctly signed callback 503 SERVICE_UNAVAILABLE with Retry-After, and stores nothing",
    async (t) => {
      const paused = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
      await changePartnerStatus(server.services, paused.partnerKey, "paused");
      const body = { tenant_id: tenant.tenantId, payload: { event: "user.updated", event_id: "evt-paused" } };
      const res = await callback(server, paused.partnerKey, body, {
        header: signCallback(paused.callbackSecret, paused.partnerKey, body),
      });
      t.equal(res.status, 503);
      t.equal(res.headers.get("retry-after"), "300");
      t.equal((await res.json()).error.code, "SERVICE_UNAVAILABLE");
      t.equal(
        (
          await server.services
            .db("integrator.partner_callbacks")
            .where({ partner_key: paused.partnerKey })
            .select("id")
        ).length,
        0,
      );

      const forged = await callback(server, paused.partnerKey, body, { header: "00".repeat(32) });
      t.equal(forged.status, 400, "an unsigned caller does not learn that the partner is paused");

      await changePartnerStatus(server.services, paused.partnerKey, "active");
      t.equal(
        (
          await callback(server, paused.partnerKey, body, {
            header: signCallback(paused.callbackSecret, paused.partnerKey, body),
          })
        ).status,
        202,
        "the retry after resume is accepted",
      );
    },
  );

  t.test("the callback secret is stored sealed, never in plain text", async (t) => {
    const row = await server.services
      .db("integrator.partners")
      .where({ partner_key: partner.partnerKey })
      .first("callback_secret_encrypted");
    t.notMatch(row?.callback_secret_encrypted, partner.callbackSecret);
    t.equal(server.services.secretBox.open(row?.callback_secret_encrypted), partner.callbackSecret);
  });

  t.test("nothing unexpected was logged", async (t) => {
    t.same(server.errors, []);
  });
});

t.test(
  "a Python partner following the signing recipe of docs/integrating.md is accepted",
  { skip: spawnSync("python3", ["--version"]).status === 0 ? false : "python3 is not installed" },
  async (t) => {
    const recipe = /```python\n([\s\S]*?)```/.exec(
      fs.readFileSync(new URL("../../docs/integrating.md", import.meta.url), "utf8"),
    )?.[1];
    if (!recipe) throw new Error("docs/integrating.md has no Python recipe");
    const server = await startTestServer(t);
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { partnerKey: "benefits-co", entitle: [tenant.tenantId] });
    const script = recipe
      .replace('"pcs_..."', JSON.stringify(partner.callbackSecret))
      .replace("0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69", tenant.tenantId)
      .replace("https://integrator.example.com", server.baseUrl);
    // Asynchronously: the script calls this process's server.
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = spawn("python3", ["-c", script], { stdio: ["ignore", "pipe", "inherit"] });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.on("error", reject);
      child.on("close", () => resolve(output));
    });
    t.equal(stdout.trim(), "202");
    t.match(
      await callbackRows(server, tenant.tenantId),
      [{ event: "enrolment.completed", payload: { employee: "Zoë" } }],
      "the non-ASCII payload is stored as sent",
    );
  },
);

t.test(
  "an unreachable database answers a callback (and a launch) 503 SERVICE_UNAVAILABLE with Retry-After, not 500",
  async (t) => {
    const relay = await databaseRelay(t, await createTestDatabase(t));
    const server = await startTestServer(t, { databaseUrl: relay.url });
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const body = { tenant_id: tenant.tenantId, payload: { event: "user.updated", event_id: "evt-outage" } };
    const signature = signCallback(partner.callbackSecret, partner.partnerKey, body);
    t.equal(
      (await callback(server, partner.partnerKey, body, { header: signature })).status,
      202,
      "accepted while the database is there",
    );

    await relay.cut();
    for (const attempt of ["with pooled connections gone", "with no connection possible"]) {
      const next = { ...body, payload: { ...body.payload, event_id: `evt-outage-${attempt}` } };
      const res = await callback(server, partner.partnerKey, next, {
        header: signCallback(partner.callbackSecret, partner.partnerKey, next),
      });
      t.equal(res.status, 503, attempt);
      t.equal(res.headers.get("retry-after"), "2");
      const answer = await res.json();
      t.equal(answer.error.code, "SERVICE_UNAVAILABLE");
      t.notMatch(JSON.stringify(answer), /127\.0\.0\.1|postgres|ECONNREFUSED/);
    }
    const launch = await server.request("/v1/launch", {
      method: "POST",
      token: tenant.token,
      json: { partner_key: partner.partnerKey },
    });
    t.equal(launch.status, 503, "launch (and switch) answer an outage the same way");
    t.equal(launch.headers.get("retry-after"), "2");
    t.same(server.errors, [], "not logged as an unexpected error");
  },
);
