// The contract package as an SDK (openapi/package/src) against the real service: the token provider (both
// grants, the token kept until shortly before it expires, one refresh for callers asking at once), retries
// after Retry-After only for requests safe to repeat, an Idempotency-Key on every intake and partner-switch
// call, and verifyWebhook over deliveries signed by the service's own signing code.
import { createHmac, randomBytes } from "node:crypto";
import t from "tap";
import { Webhook } from "standardwebhooks";
import {
  createIntegratorClient,
  createTokenProvider,
  idempotentOperationPaths,
  retryAfterMilliseconds,
  TokenRequestError,
  verifyWebhook,
  WebhookVerificationError,
  withIdempotencyKey,
  type RetryNotice,
} from "../../openapi/package/src/index.ts";
import { registerClient } from "../../handlers/auth/principals.ts";
import { disableClient } from "../../db/principals.ts";
import { loadDocument } from "../../http/openapi-document.ts";
import { newWebhookSecret } from "../../foundation/signing.ts";
import { signatureHeaders } from "../../worker/signatures.ts";
import { createTestTenant, createTestUser, startTestServer, type TestServer } from "../helpers/server.ts";
import { createTestPartner } from "../helpers/partners.ts";

const TOKEN_TTL_SECONDS = 120;
const SUBMISSION = { filename: "claim-4711.pdf", file_size: 482133, mime_type: "application/pdf" };

/** A fetch that sends every request to the service and keeps a copy of each. */
function recordingFetch() {
  const sent: Request[] = [];
  return {
    sent,
    to: (pathname: string) => sent.filter((request) => new URL(request.url).pathname === pathname),
    fetch: (request: Request) => {
      sent.push(request.clone());
      return fetch(request);
    },
  };
}

async function newClient(server: TestServer, tenantId?: string) {
  const tenant = tenantId ?? (await createTestTenant(server.services)).tenantId;
  const client = await registerClient(server.services.db, { tenantId: tenant, roles: ["client_admin"] });
  return { tenantId: tenant, clientId: client.client_id, clientSecret: client.client_secret };
}

t.test("the token provider", async (t) => {
  const server = await startTestServer(t, { env: { ACCESS_TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS) } });
  const baseUrl = server.baseUrl;

  t.test("the client credentials grant: one form-encoded token request, the token kept and used", async (t) => {
    const { tenantId, clientId, clientSecret } = await newClient(server);
    const recorder = recordingFetch();
    const token = createTokenProvider({ baseUrl, clientId, clientSecret, fetch: recorder.fetch });
    const api = createIntegratorClient({ baseUrl, token, fetch: recorder.fetch });
    const first = await api.GET("/v1/me");
    const second = await api.GET("/v1/me");
    t.equal(first.response.status, 200);
    t.equal(first.data?.subject, clientId);
    t.equal(first.data?.tenant_id, tenantId);
    t.equal(second.response.status, 200);
    const [request, ...more] = recorder.to("/token");
    t.equal(more.length, 0, "one token request for both calls");
    t.equal(request?.method, "POST");
    t.equal(request?.headers.get("content-type"), "application/x-www-form-urlencoded");
    t.same(Object.fromEntries(new URLSearchParams(await request?.text())), {
      grant_type: "client_credentials",
      client_id: clientId,
      client_secret: clientSecret,
    });
    const bearer = recorder.to("/v1/me").map((call) => call.headers.get("authorization"));
    t.equal(bearer[0], `Bearer ${await token()}`);
    t.equal(bearer[1], bearer[0]);
  });

  t.test("HTTP Basic client authentication (RFC 6749 §2.3.1)", async (t) => {
    const { clientId, clientSecret } = await newClient(server);
    const recorder = recordingFetch();
    const token = createTokenProvider({
      baseUrl,
      clientId,
      clientSecret,
      clientAuthentication: "basic",
      fetch: recorder.fetch,
    });
    const me = await createIntegratorClient({ baseUrl, token }).GET("/v1/me");
    t.equal(me.data?.subject, clientId);
    const [request] = recorder.to("/token");
    t.equal(request?.headers.get("authorization"), `Basic ${btoa(`${clientId}:${clientSecret}`)}`);
    t.same(Object.fromEntries(new URLSearchParams(await request?.text())), { grant_type: "client_credentials" });
  });

  t.test("the password grant", async (t) => {
    const tenant = await createTestTenant(server.services);
    const user = await createTestUser(server.services, tenant.tenantId);
    const token = createTokenProvider({ baseUrl, username: user.username, password: user.password });
    const me = await createIntegratorClient({ baseUrl, token }).GET("/v1/me");
    t.equal(me.response.status, 200);
    t.equal(me.data?.tenant_id, tenant.tenantId);
    t.same(me.data?.roles, ["client_admin"]);
  });

  t.test("a new token is fetched refreshMarginSeconds before expires_in runs out, never before half", async (t) => {
    const { clientId, clientSecret } = await newClient(server);
    for (const [margin, refreshAfterMs] of [
      [undefined, (TOKEN_TTL_SECONDS - 60) * 1000],
      [30, (TOKEN_TTL_SECONDS - 30) * 1000],
      [600, (TOKEN_TTL_SECONDS / 2) * 1000],
    ] as const) {
      let clock = Date.parse("2026-11-26T12:00:00Z");
      const start = clock;
      const recorder = recordingFetch();
      const token = createTokenProvider({
        baseUrl,
        clientId,
        clientSecret,
        fetch: recorder.fetch,
        now: () => clock,
        ...(margin === undefined ? {} : { refreshMarginSeconds: margin }),
      });
      const first = await token();
      clock = start + refreshAfterMs - 1;
      t.equal(await token(), first, `margin ${margin ?? "default"}: kept until just before the refresh`);
      t.equal(recorder.to("/token").length, 1);
      clock = start + refreshAfterMs;
      const second = await token();
      t.not(second, first, `margin ${margin ?? "default"}: a new token at ${refreshAfterMs / 1000} s`);
      t.equal(recorder.to("/token").length, 2);
      const me = await createIntegratorClient({ baseUrl, token: second }).GET("/v1/me");
      t.equal(me.response.status, 200, "the new token is accepted");
    }
  });

  t.test("callers asking at once share one token request, first and at each refresh", async (t) => {
    const { clientId, clientSecret } = await newClient(server);
    let clock = Date.now();
    const recorder = recordingFetch();
    const token = createTokenProvider({ baseUrl, clientId, clientSecret, fetch: recorder.fetch, now: () => clock });
    const first = await Promise.all(Array.from({ length: 10 }, () => token()));
    t.equal(new Set(first).size, 1, "every caller got the same token");
    t.equal(recorder.to("/token").length, 1);
    clock += (TOKEN_TTL_SECONDS - 60) * 1000;
    const api = createIntegratorClient({ baseUrl, token });
    const calls = await Promise.all(Array.from({ length: 10 }, () => api.GET("/v1/me")));
    t.same(
      calls.map((call) => call.response.status),
      Array(10).fill(200),
    );
    t.equal(recorder.to("/token").length, 2, "one refresh for ten calls");
    t.not(await token(), first[0]);
  });

  t.test("a refusal is a TokenRequestError with the RFC 6749 error, never kept, never retried", async (t) => {
    const { clientId } = await newClient(server);
    const recorder = recordingFetch();
    const token = createTokenProvider({ baseUrl, clientId, clientSecret: "cs_wrong", fetch: recorder.fetch });
    const refused = await token().catch((error: unknown) => error);
    t.ok(refused instanceof TokenRequestError);
    t.match(refused, { status: 401, error: "invalid_client" });
    t.equal(recorder.to("/token").length, 1);
    await t.rejects(token(), TokenRequestError);
    t.equal(recorder.to("/token").length, 2, "the next call asks again");
  });

  t.test("a failed refresh hands out the kept token until it expires", async (t) => {
    const { clientId, clientSecret } = await newClient(server);
    let clock = Date.now();
    const start = clock;
    const recorder = recordingFetch();
    const token = createTokenProvider({ baseUrl, clientId, clientSecret, fetch: recorder.fetch, now: () => clock });
    const kept = await token();
    await disableClient(server.services.db, clientId);
    clock = start + (TOKEN_TTL_SECONDS - 30) * 1000;
    t.equal(await token(), kept, "within its lifetime the kept token is returned");
    t.equal(recorder.to("/token").length, 2, "after a refresh was tried");
    clock = start + TOKEN_TTL_SECONDS * 1000;
    const refused = await token().catch((error: unknown) => error);
    t.ok(refused instanceof TokenRequestError, "once it has expired the refusal shows");
    t.match(refused, { status: 401, error: "invalid_client" });
  });

  t.test("a call that brings its own Authorization keeps it", async (t) => {
    const { clientId, clientSecret } = await newClient(server);
    const other = await createTestTenant(server.services);
    const api = createIntegratorClient({ baseUrl, token: createTokenProvider({ baseUrl, clientId, clientSecret }) });
    t.equal((await api.GET("/v1/me")).data?.subject, clientId);
    const own = await api.GET("/v1/me", { headers: { Authorization: `Bearer ${other.token}` } });
    t.equal(own.data?.subject, other.subject);
  });

  t.test("invalidate() drops the kept token", async (t) => {
    const { clientId, clientSecret } = await newClient(server);
    const recorder = recordingFetch();
    const token = createTokenProvider({ baseUrl, clientId, clientSecret, fetch: recorder.fetch });
    const first = await token();
    token.invalidate();
    t.not(await token(), first);
    t.equal(recorder.to("/token").length, 2);
  });
});

t.test("the token provider waits out a 503 of the token endpoint for Retry-After", async (t) => {
  // One credential check at a time and none waiting: concurrent token requests are answered 503 Retry-After: 1.
  const server = await startTestServer(t, { env: { AUTH_HASH_CONCURRENCY: "1", AUTH_HASH_QUEUE_MAX: "0" } });
  const { clientId, clientSecret } = await newClient(server);
  const notices: RetryNotice[] = [];
  const providers = Array.from({ length: 4 }, () =>
    createTokenProvider({
      baseUrl: server.baseUrl,
      clientId,
      clientSecret,
      retry: { maxAttempts: 10, onRetry: (notice) => notices.push(notice) },
    }),
  );
  const tokens = await Promise.all(providers.map((token) => token()));
  t.equal(new Set(tokens).size, 4, "every provider got its token");
  t.ok(notices.length > 0, "some token requests were answered 503 first");
  for (const notice of notices) t.match(notice, { status: 503, waitMs: 1000, method: "POST" });
});

t.test("retries: only what is safe to repeat, never longer than maxWaitSeconds", async (t) => {
  const server = await startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: "1" } });
  /** A client of a new principal that has used up its one request of this minute. */
  async function limited(retry?: Parameters<typeof createIntegratorClient>[0]["retry"]) {
    const tenant = await createTestTenant(server.services);
    const notices: RetryNotice[] = [];
    const recorder = recordingFetch();
    const api = createIntegratorClient({
      baseUrl: server.baseUrl,
      token: tenant.token,
      fetch: recorder.fetch,
      retry: retry === false ? false : { ...retry, onRetry: (notice) => notices.push(notice) },
    });
    t.equal((await api.GET("/v1/me")).response.status, 200);
    return { api, notices, recorder };
  }

  t.test("a POST without an Idempotency-Key is answered 429 without a retry", async (t) => {
    const { api, notices, recorder } = await limited();
    const started = performance.now();
    const created = await api.POST("/v1/webhooks/subscriptions", {
      body: { url: "https://hooks.example.com/a", events: ["*"] },
    });
    t.equal(created.response.status, 429);
    t.same(notices, []);
    t.equal(recorder.to("/v1/webhooks/subscriptions").length, 1);
    t.ok(performance.now() - started < 5000, "answered at once");
  });

  t.test("a Retry-After longer than maxWaitSeconds is not waited: the 429 is the answer", async (t) => {
    const { api, notices, recorder } = await limited({ maxWaitSeconds: 1 });
    const me = await api.GET("/v1/me");
    t.equal(me.response.status, 429);
    t.ok(Number(me.response.headers.get("retry-after")) > 1, "the service asked for more than a second");
    t.same(notices, []);
    t.equal(recorder.to("/v1/me").length, 2);
  });

  t.test("retry: false sends a keyed call once", async (t) => {
    const { api, recorder } = await limited(false);
    const submitted = await api.POST("/v1/intake/submit", { body: SUBMISSION });
    t.equal(submitted.response.status, 429);
    t.equal(recorder.to("/v1/intake/submit").length, 1);
  });
});

t.test("Retry-After is read in seconds or as an HTTP date", async (t) => {
  const now = Date.parse("2026-11-26T12:00:00Z");
  t.equal(retryAfterMilliseconds("120", now), 120_000);
  t.equal(retryAfterMilliseconds("0", now), 0);
  t.equal(retryAfterMilliseconds("Thu, 26 Nov 2026 12:01:30 GMT", now), 90_000);
  t.equal(retryAfterMilliseconds("Thu, 26 Nov 2026 11:59:00 GMT", now), 0, "a date past is no wait");
  for (const junk of [null, "", "-5", "1.5", "soon", "12 s"])
    t.equal(retryAfterMilliseconds(junk, now), undefined, `${JSON.stringify(junk)} is no Retry-After`);
});

t.test("Idempotency-Key", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const submissions = async () =>
    Number(
      (
        await server.services
          .db("integrator.intake_submissions")
          .where({ tenant_id: tenant.tenantId })
          .count<{ count: string }[]>("* as count")
      )[0]?.count,
    );

  t.test("the operations that take one in the document are exactly those the client keys", async (t) => {
    const keyed = Object.entries(loadDocument().paths ?? {}).flatMap(([path, item]) =>
      Object.entries(item ?? {}).flatMap(([method, operation]) =>
        JSON.stringify((operation as { parameters?: unknown }).parameters ?? []).includes(
          "#/components/parameters/IdempotencyKey",
        )
          ? [`${method} ${path}`]
          : [],
      ),
    );
    t.same(keyed.sort(), idempotentOperationPaths.map((path) => `post ${path}`).sort());
  });

  t.test("every intake and partner-switch call carries a new key unless the caller gives one", async (t) => {
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const recorder = recordingFetch();
    const api = createIntegratorClient({ baseUrl: server.baseUrl, token: tenant.token, fetch: recorder.fetch });
    t.equal((await api.POST("/v1/intake/submit", { body: SUBMISSION })).response.status, 201);
    t.equal((await api.POST("/v1/intake/submit", { body: SUBMISSION })).response.status, 201);
    t.equal((await api.POST("/v1/intake/batch", { body: { items: [SUBMISSION] } })).response.status, 201);
    const switched = await api.POST("/v1/partner-switch", { body: { target_partner_key: partner.partnerKey } });
    t.equal(switched.response.status, 200);
    const given = await api.POST("/v1/intake/submit", { body: SUBMISSION, ...withIdempotencyKey("order-4711") });
    t.equal(given.response.status, 201);
    await api.POST("/v1/webhooks/subscriptions", { body: { url: "https://hooks.example.com/k", events: ["*"] } });
    await api.GET("/v1/me");

    const keys = recorder.sent.map((request) => [
      new URL(request.url).pathname,
      request.headers.get("idempotency-key"),
    ]);
    const made = keys.slice(0, 4).map(([, key]) => key ?? "");
    for (const key of made) t.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    t.equal(new Set(made).size, 4, "a new key per call");
    t.same(keys.slice(4), [
      ["/v1/intake/submit", "order-4711"],
      ["/v1/webhooks/subscriptions", null],
      ["/v1/me", null],
    ]);
    t.equal(await submissions(), 4, "every call made its own submission");
  });

  t.test("a call whose answer was lost is sent again with the same key and replayed, not repeated", async (t) => {
    const before = await submissions();
    const sent: Request[] = [];
    const notices: RetryNotice[] = [];
    const api = createIntegratorClient({
      baseUrl: server.baseUrl,
      token: tenant.token,
      retry: { onRetry: (notice) => notices.push(notice) },
      // The service acts on the first attempt, but its answer never arrives.
      fetch: async (request) => {
        sent.push(request.clone());
        const response = await fetch(request);
        if (sent.length > 1) return response;
        await response.arrayBuffer();
        throw new TypeError("fetch failed");
      },
    });
    const submitted = await api.POST("/v1/intake/submit", { body: SUBMISSION });
    t.equal(submitted.response.status, 201);
    t.equal(submitted.response.headers.get("idempotent-replayed"), "true", "the service replayed its first answer");
    t.equal(sent.length, 2);
    t.ok(sent[0]?.headers.get("idempotency-key"));
    t.equal(sent[1]?.headers.get("idempotency-key"), sent[0]?.headers.get("idempotency-key"));
    t.match(notices, [{ attempt: 1, status: undefined, method: "POST" }]);
    t.equal(await submissions(), before + 1, "one submission");
  });

  t.test("a POST without a key whose answer was lost is not sent again", async (t) => {
    let sent = 0;
    const api = createIntegratorClient({
      baseUrl: server.baseUrl,
      token: tenant.token,
      fetch: async (request) => {
        sent++;
        await (await fetch(request)).arrayBuffer();
        throw new TypeError("fetch failed");
      },
    });
    await t.rejects(
      api.POST("/v1/webhooks/subscriptions", { body: { url: "https://hooks.example.com/lost", events: ["*"] } }),
      TypeError,
    );
    t.equal(sent, 1);
  });
});

t.test("verifyWebhook", async (t) => {
  const body = JSON.stringify({
    data: {
      accepted_count: 1,
      external_reference: null,
      failed_count: 0,
      item_count: 1,
      module: null,
      status: "received",
      submission_id: "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69",
      tier: null,
    },
    event: "intake.submitted",
    tenant_id: "0192f0b1-0000-7000-8000-000000000001",
    timestamp: new Date().toISOString(),
  });
  const signed = (secrets: string[], at = Date.now() / 1000, id = "0192f0c5-1111-7000-8000-000000000002") =>
    signatureHeaders(secrets, { id, timestamp: at, body });

  t.test("a delivery signed by the service verifies with the secret as returned, typed by its kind", async (t) => {
    const secret = newWebhookSecret();
    const headers = signed([secret]);
    for (const [form, received] of [
      ["a record", headers],
      ["fetch Headers", new Headers(headers)],
      ["lower-case names", Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))],
    ] as const) {
      const event = verifyWebhook(body, received, secret);
      t.equal(event.event, "intake.submitted", form);
      if (event.event === "intake.submitted") t.equal(event.data.submission_id, "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69");
    }
    t.equal(verifyWebhook(Buffer.from(body), headers, secret).event, "intake.submitted", "the body as bytes");
  });

  t.test(
    "a secret of an earlier version (base64url) verifies too, as the standardwebhooks package alone cannot",
    async (t) => {
      let older: string;
      do older = `whsec_${randomBytes(32).toString("base64url")}`;
      while (!/[-_]/.test(older.slice(6)));
      t.throws(() => new Webhook(older), "new Webhook() refuses the base64url alphabet");
      t.equal(verifyWebhook(body, signed([older]), older).event, "intake.submitted");
    },
  );

  t.test("during a secret rotation either secret verifies", async (t) => {
    const [current, previous] = [newWebhookSecret(), newWebhookSecret()];
    const headers = signed([current, previous]);
    t.equal(verifyWebhook(body, headers, current).event, "intake.submitted");
    t.equal(verifyWebhook(body, headers, previous).event, "intake.submitted");
  });

  t.test("what the secret did not sign, an old timestamp or missing headers are refused", async (t) => {
    const secret = newWebhookSecret();
    const headers = signed([secret]);
    const refusals: [string, () => unknown][] = [
      ["a changed body", () => verifyWebhook(body.replace("received", "accepted"), headers, secret)],
      ["another secret", () => verifyWebhook(body, headers, newWebhookSecret())],
      ["another id", () => verifyWebhook(body, { ...headers, "webhook-id": "another" }, secret)],
      ["ten minutes old", () => verifyWebhook(body, signed([secret], Date.now() / 1000 - 600), secret)],
      ["no signature", () => verifyWebhook(body, { ...headers, "webhook-signature": undefined }, secret)],
      ["no secret", () => verifyWebhook(body, headers, "whsec_")],
    ];
    for (const [what, verify] of refusals) t.throws(verify, WebhookVerificationError, what);
    t.throws(() => verifyWebhook(JSON.parse(body), headers, secret), TypeError, "a parsed body");
  });

  /** Headers signed by the standardwebhooks package itself (Webhook.sign), for a body given as text. */
  const librarySigned = (secret: string, text: string, id = "evt_0192f0c5-1111-7000-8000-000000000002") => {
    const at = new Date();
    return {
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new Webhook(secret).sign(id, at, text),
    };
  };

  t.test("a delivery signed by the standardwebhooks package verifies, as text and as bytes", async (t) => {
    const secret = newWebhookSecret();
    const headers = librarySigned(secret, body);
    t.equal(verifyWebhook(body, headers, secret).event, "intake.submitted", "text");
    t.equal(verifyWebhook(Buffer.from(body), headers, secret).event, "intake.submitted", "a Buffer");
    t.equal(verifyWebhook(new TextEncoder().encode(body), headers, secret).event, "intake.submitted", "a Uint8Array");
  });

  t.test("the secret must encode a Standard Webhooks key: 24 to 64 bytes", async (t) => {
    const withKey = (bytes: number) => `whsec_${randomBytes(bytes).toString("base64")}`;
    for (const [what, secret] of [
      ["a 1-byte key (whsec_AQ==)", "whsec_AQ=="],
      ["a 16-byte key", withKey(16)],
      ["a 23-byte key", withKey(23)],
      ["a 65-byte key", withKey(65)],
    ] as const) {
      const headers = librarySigned(secret, body);
      t.throws(
        () => verifyWebhook(body, headers, secret),
        { name: "WebhookVerificationError", message: /-byte key; Standard Webhooks keys are 24 to 64 bytes/ },
        `${what} is refused, though the package signs with it`,
      );
    }
    for (const bytes of [24, 32, 64]) {
      const secret = withKey(bytes);
      t.equal(verifyWebhook(body, librarySigned(secret, body), secret).event, "intake.submitted", `${bytes} bytes`);
    }
    for (const secret of ["whsec_", "whsec_not base64!", "whsec_AAAAA"])
      t.throws(() => verifyWebhook(body, librarySigned(newWebhookSecret(), body), secret), WebhookVerificationError);
  });

  t.test("the signature covers the exact bytes received: nothing is decoded away or replaced", async (t) => {
    const secret = newWebhookSecret();
    const headers = signed([secret]);
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    t.throws(
      () => verifyWebhook(Buffer.concat([bom, Buffer.from(body)]), headers, secret),
      { name: "WebhookVerificationError", message: /did not verify/ },
      "a byte order mark before the signed body",
    );
    t.throws(() => verifyWebhook(`\uFEFF${body}`, headers, secret), WebhookVerificationError, "the same as text");
    // Signed over those exact bytes, a byte order mark verifies, and then the body is not JSON.
    const withBom = `\uFEFF${body}`;
    t.throws(
      () => verifyWebhook(Buffer.from(withBom), librarySigned(secret, withBom), secret),
      { name: "WebhookVerificationError", message: /not JSON/ },
      "a signed byte order mark is no event",
    );
    // Bytes that are not UTF-8, signed exactly as they are: no decoding could give them back.
    const invalid = Buffer.concat([Buffer.from(body.slice(0, -2)), Buffer.from([0xff]), Buffer.from("}}")]);
    const id = "evt_0192f0c5-1111-7000-8000-000000000003";
    const at = String(Math.floor(Date.now() / 1000));
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    const mac = createHmac("sha256", key).update(`${id}.${at}.`).update(invalid).digest("base64");
    t.throws(
      () =>
        verifyWebhook(invalid, { "webhook-id": id, "webhook-timestamp": at, "webhook-signature": `v1,${mac}` }, secret),
      { name: "WebhookVerificationError", message: /not UTF-8/ },
      "bytes that are not UTF-8",
    );
    t.throws(() => verifyWebhook(`${body}\uD800`, headers, secret), WebhookVerificationError, "a lone surrogate");
  });

  t.test("an authentic body that is not an event is refused, saying what is missing", async (t) => {
    const secret = newWebhookSecret();
    const event = JSON.parse(body) as Record<string, unknown>;
    const cases: [string, unknown, RegExp][] = [
      ["data: null", { ...event, data: null }, /data must be an object/],
      ["data: an array", { ...event, data: [] }, /data must be an object/],
      ["no data", { ...event, data: undefined }, /data must be an object/],
      ["no event", { ...event, event: undefined }, /event must be/],
      ["tenant_id not a UUID", { ...event, tenant_id: "acme" }, /tenant_id must be a UUID/],
      ["a timestamp that is no date", { ...event, timestamp: "yesterday" }, /timestamp must be/],
      ["an array", [event], /not a JSON object/],
      ["null", null, /not a JSON object/],
    ];
    for (const [what, value, message] of cases) {
      const text = JSON.stringify(value);
      t.throws(
        () => verifyWebhook(text, librarySigned(secret, text), secret),
        { name: "WebhookVerificationError", message },
        what,
      );
    }
    const later = JSON.stringify({ ...event, id: "evt_0192f0c5-1111-7000-8000-000000000002", origin: "test" });
    t.equal(
      verifyWebhook(later, librarySigned(secret, later), secret).event,
      "intake.submitted",
      "fields it does not know pass",
    );
  });
});
