// Webhook portal sessions: the link and its credential, accepted only by the
// operations declaring PortalSession, for one tenant only, never logged, and the /portal page's headers.
import { decodeJwt } from "jose";
import t from "tap";
import { loadDocument } from "../../http/openapi-document.ts";
import {
  createTestTenant,
  startReplica,
  startTestServer,
  type TestServer,
  type TestTenant,
} from "../helpers/server.ts";
import { emitEvent } from "../../db/events.ts";
import { loadConfig, ConfigError } from "../../foundation/config.ts";
import { intakeEventData } from "../helpers/webhooks.ts";

/**
 * The operations a portal credential may call, and no other: those the portal page uses, and the listen
 * session's, which the contract package's `listen` command calls with a portal link (docs/decisions.md §11).
 */
const PORTAL_OPERATIONS = [
  "createWebhookListenSession",
  "deleteWebhookListenSession",
  "pollWebhookListenSession",
  "reportWebhookListenAnswer",
  "createWebhookSubscription",
  "deleteWebhookSubscription",
  "disableWebhookSubscription",
  "enableWebhookSubscription",
  "getCurrentPrincipal",
  "getWebhookDelivery",
  "getWebhookSubscription",
  "listWebhookDeliveries",
  "listWebhookSubscriptions",
  "redeliverWebhookDelivery",
  "refreshWebhookPortalSession",
  "rotateWebhookSecret",
  "sendWebhookTestEvent",
  "updateWebhookSubscription",
].sort();

const text: string[] = [];
const logs = { write: (line: string) => void text.push(line) };

let server: TestServer;
let tenantA: TestTenant;
let tenantB: TestTenant;

t.before(async () => {
  server = await startTestServer(t, {
    logDestination: logs,
    env: { PUBLIC_BASE_URL: "https://integrator.example.com", PORTAL_SESSION_TTL_MINUTES: "7" },
  });
  tenantA = await createTestTenant(server.services, ["client_admin"], "Tenant A");
  tenantB = await createTestTenant(server.services, ["client_admin"], "Tenant B");
});

async function portalLink(who: TestTenant, query = ""): Promise<Response> {
  return server.request(`/v1/webhooks/portal-sessions${query}`, { method: "POST", token: who.token });
}

async function portalToken(who: TestTenant): Promise<string> {
  const res = await portalLink(who);
  if (res.status !== 201) throw new Error(`portal session answered ${res.status}: ${await res.text()}`);
  const { url } = (await res.json()) as { url: string };
  return new URL(url).hash.replace(/^#token=/, "");
}

interface DocumentOperation {
  operationId: string;
  method: string;
  path: string;
  portal: boolean;
  open: boolean;
}

function documentOperations(): DocumentOperation[] {
  const document = loadDocument();
  const operations: DocumentOperation[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of ["get", "post", "put", "patch", "delete"] as const) {
      const operation = (item as Record<string, { operationId?: string; security?: Record<string, string[]>[] }>)[
        method
      ];
      if (!operation?.operationId) continue;
      const security = operation.security ?? document.security ?? [];
      operations.push({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        path: path.replace(/\{[^}]+\}/g, () => crypto.randomUUID()),
        portal: security.some((requirement) => "PortalSession" in requirement),
        open: !security.some((requirement) => Object.keys(requirement).length > 0),
      });
    }
  }
  return operations;
}

t.test("a tenant admin gets a portal link holding a short-lived credential for that tenant only", async (t) => {
  const res = await portalLink(tenantA);
  t.equal(res.status, 201);
  const body = (await res.json()) as { url: string; tenant_id: string; expires_at: string; expires_in: number };
  t.match(body.url, /^https:\/\/integrator\.example\.com\/portal#token=[\w-]+\.[\w-]+\.[\w-]+$/);
  t.equal(body.tenant_id, tenantA.tenantId);
  t.equal(body.expires_in, 7 * 60, "the lifetime is PORTAL_SESSION_TTL_MINUTES");
  const claims = decodeJwt(new URL(body.url).hash.replace(/^#token=/, ""));
  t.equal(claims.aud, "integrator-portal");
  t.equal(claims.scope, "webhooks:portal");
  t.equal(claims.tenant_id, tenantA.tenantId);
  t.same(claims.roles, [], "the credential carries no role");
  t.equal((claims.exp ?? 0) - (claims.iat ?? 0), 7 * 60, "exp and iat are set, 7 minutes apart");
  t.equal(new Date(body.expires_at).getTime(), (claims.exp ?? 0) * 1000);
  const audit = await server.services.db("integrator.audit_actions").where({
    tenant_id: tenantA.tenantId,
    action: "webhooks.portal_session_created",
  });
  t.ok(audit.length >= 1, "the session is audited");
});

t.test("only a platform_admin names another tenant; an unknown tenant is 404", async (t) => {
  t.equal((await portalLink(tenantA, `?tenant_id=${tenantB.tenantId}`)).status, 403, "client_admin: 403");
  const platform = await createTestTenant(server.services, ["platform_admin"], "Platform");
  const res = await portalLink(platform, `?tenant_id=${tenantB.tenantId}`);
  t.equal(res.status, 201);
  t.equal(((await res.json()) as { tenant_id: string }).tenant_id, tenantB.tenantId);
  t.equal((await portalLink(platform, `?tenant_id=${crypto.randomUUID()}`)).status, 404);
  const reader = await createTestTenant(server.services, ["viewer"], "Viewer");
  t.equal((await portalLink(reader)).status, 403, "a token without an admin role gets no link");
  t.equal((await server.request("/v1/webhooks/portal-sessions", { method: "POST" })).status, 401);
});

t.test(
  "the portal scheme is declared by exactly the webhook operations the page uses and the listen session's",
  async (t) => {
    const declared = documentOperations()
      .filter((operation) => operation.portal)
      .map((operation) => operation.operationId)
      .sort();
    t.same(declared, PORTAL_OPERATIONS);
  },
);

t.test("every other operation refuses the portal credential, portal sessions included", async (t) => {
  const token = await portalToken(tenantA);
  for (const operation of documentOperations().filter((candidate) => !candidate.portal)) {
    const init = {
      method: operation.method,
      token,
      ...(operation.method === "GET" ? {} : { json: {} }),
    };
    const res = await server.request(operation.path, init);
    if (operation.open) {
      // An open operation ignores bearer tokens: the credential must gain nothing over no credential at all.
      const { token: _ignored, ...anonymous } = init;
      const without = await server.request(operation.path, anonymous);
      t.equal(res.status, without.status, `${operation.operationId} answers as without any credential`);
    } else {
      t.equal(res.status, 401, `${operation.operationId} refuses it`);
      t.match(res.headers.get("www-authenticate") ?? "", /invalid_token/);
    }
  }
});

t.test("GET /v1/me names the tenant, for an access token and for a portal credential", async (t) => {
  const asAdmin = await server.request("/v1/me", { token: tenantA.token });
  t.equal(asAdmin.status, 200);
  t.match(await asAdmin.json(), { tenant_id: tenantA.tenantId, tenant_name: "Tenant A", subject: tenantA.subject });
  const asPortal = await server.request("/v1/me", { token: await portalToken(tenantA) });
  t.equal(asPortal.status, 200);
  t.match(await asPortal.json(), {
    tenant_id: tenantA.tenantId,
    tenant_name: "Tenant A",
    subject: `portal:${tenantA.subject}`,
    roles: [],
  });
  const unregistered = await server.services.tokens.issue({
    subject: "someone",
    tenantId: crypto.randomUUID(),
    roles: ["client_admin"],
  });
  t.match(await (await server.request("/v1/me", { token: unregistered.token })).json(), { tenant_name: null });
});

t.test("a portal session is refreshed with a new credential, up to 8 hours after its link", async (t) => {
  const first = await portalToken(tenantA);
  const started = decodeJwt(first).session_iat as number;
  t.ok(Math.abs(started - Date.now() / 1000) < 60, "the link's credential carries the session's start");
  const refresh = (token: string) => server.request("/v1/webhooks/portal-sessions/refresh", { method: "POST", token });
  const res = await refresh(first);
  t.equal(res.status, 201);
  const body = (await res.json()) as { url: string; tenant_id: string; expires_at: string; expires_in: number };
  t.match(body.url, /^https:\/\/integrator\.example\.com\/portal#token=[\w-]+\.[\w-]+\.[\w-]+$/);
  t.equal(body.tenant_id, tenantA.tenantId);
  t.equal(body.expires_in, 7 * 60, "PORTAL_SESSION_TTL_MINUTES from now");
  const second = new URL(body.url).hash.replace(/^#token=/, "");
  t.not(second, first, "a new credential");
  const claims = decodeJwt(second);
  t.match(claims, { aud: "integrator-portal", scope: "webhooks:portal", tenant_id: tenantA.tenantId });
  t.equal(claims.sub, tenantA.subject, "the link creator's subject, as in the first credential");
  t.equal(claims.session_iat, started, "the session's start is carried over");
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: second })).status, 200, "it works");
  const audit = await server.services.db("integrator.audit_actions").where({
    tenant_id: tenantA.tenantId,
    action: "webhooks.portal_session_refreshed",
  });
  t.ok(audit.length >= 1, "the refresh is audited");

  const now = Math.floor(Date.now() / 1000);
  const nearlyOld = await server.services.tokens.issuePortal({
    subject: tenantA.subject,
    tenantId: tenantA.tenantId,
    creatorTenantId: tenantA.tenantId,
    expiresInSeconds: 300,
    sessionStartedAt: now - 8 * 3600 + 120,
  });
  const capped = (await (await refresh(nearlyOld.token)).json()) as { expires_in: number };
  t.ok(capped.expires_in <= 120 && capped.expires_in > 60, `never past 8 hours from the link (${capped.expires_in} s)`);
  const old = await server.services.tokens.issuePortal({
    subject: tenantA.subject,
    tenantId: tenantA.tenantId,
    creatorTenantId: tenantA.tenantId,
    expiresInSeconds: 300,
    sessionStartedAt: now - 8 * 3600 - 1,
  });
  const refused = await refresh(old.token);
  t.equal(refused.status, 403, "8 hours after the link: no more");
  t.match(await refused.json(), { error: { code: "FORBIDDEN", message: /ask for a new portal link/ } });
  t.equal((await refresh(tenantA.token)).status, 403, "an access token is no portal credential to refresh");
  t.equal((await server.request("/v1/webhooks/portal-sessions/refresh", { method: "POST" })).status, 401);
});

t.test("a refresh retires the credential it was given: one chain of credentials per link", async (t) => {
  const refresh = (token: string) => server.request("/v1/webhooks/portal-sessions/refresh", { method: "POST", token });
  const tokenOf = async (res: Response) => new URL(((await res.json()) as { url: string }).url).hash.slice(7);
  const first = await portalToken(tenantA);
  const refreshed = await refresh(first);
  t.equal(refreshed.status, 201);
  const second = await tokenOf(refreshed);

  const again = await refresh(first);
  t.equal(again.status, 401, "a second refresh of the same credential is refused");
  t.match(await again.json(), { error: { code: "UNAUTHORIZED" } });
  t.match(again.headers.get("www-authenticate"), /error="invalid_token"/);
  for (const [name, call] of [
    ["the deliveries", () => server.request("/v1/webhooks/deliveries", { token: first })],
    ["the subscriptions", () => server.request("/v1/webhooks/subscriptions", { token: first })],
    ["GET /v1/me", () => server.request("/v1/me", { token: first })],
  ] as const)
    t.equal((await call()).status, 401, `the retired credential is refused: ${name}`);

  t.equal((await server.request("/v1/webhooks/subscriptions", { token: second })).status, 200, "its successor works");
  const third = await tokenOf(await refresh(second));
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: second })).status, 401, "until it is refreshed");
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: third })).status, 200, "the chain goes on");

  // Two refreshes of one credential at once: one wins, the other is refused.
  const racing = await Promise.all([refresh(third), refresh(third)]);
  t.same(racing.map((res) => res.status).sort(), [201, 401], "only one successor, however close the refreshes");
  // Another replica of the deployment sees the retirement too (it is in the database, not in a process).
  const replica = await startReplica(t, server);
  t.equal((await replica.request("/v1/webhooks/subscriptions", { token: third })).status, 401, "on every replica");
});

t.test("an expired, tampered or foreign-scoped credential is refused by the portal operations", async (t) => {
  const expired = await server.services.tokens.issuePortal({
    subject: tenantA.subject,
    tenantId: tenantA.tenantId,
    creatorTenantId: tenantA.tenantId,
    expiresInSeconds: -60,
  });
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: expired.token })).status, 401, "expired");

  const [header, , signature] = (await portalToken(tenantA)).split(".");
  const forged = Buffer.from(
    JSON.stringify({ ...decodeJwt(await portalToken(tenantA)), tenant_id: tenantB.tenantId }),
  ).toString("base64url");
  const tampered = `${header}.${forged}.${signature}`;
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: tampered })).status, 401, "tampered");

  const wrongScope = await server.services.tokens.issue({
    subject: tenantA.subject,
    tenantId: tenantA.tenantId,
    roles: [],
    audience: "integrator-portal",
    extraClaims: { scope: "webhooks:admin" },
  });
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: wrongScope.token })).status, 401, "scope");

  const tooLong = await server.services.tokens.issuePortal({
    subject: tenantA.subject,
    tenantId: tenantA.tenantId,
    creatorTenantId: tenantA.tenantId,
    expiresInSeconds: 61 * 60,
  });
  t.equal((await server.request("/v1/webhooks/subscriptions", { token: tooLong.token })).status, 401, "over 60 min");
});

t.test("through the portal credential, another tenant's webhooks are out of reach", async (t) => {
  const tokenA = await portalToken(tenantA);
  const createdB = await server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: tenantB.token,
    json: { url: "https://hooks.example.com/tenant-b", events: ["*"] },
  });
  const subscriptionB = (await createdB.json()) as { id: string };
  await emitEvent(
    server.services.db,
    tenantB.tenantId,
    "intake.submitted",
    intakeEventData({ external_reference: "b-only" }),
  );
  const createdA = await server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: tokenA,
    json: { url: "https://hooks.example.com/tenant-a", events: ["*"] },
  });
  t.equal(createdA.status, 201, "the portal credential creates a subscription");
  const subscriptionA = (await createdA.json()) as { tenant_id: string; created_by: string };
  t.equal(subscriptionA.tenant_id, tenantA.tenantId, "for its own tenant");
  t.equal(subscriptionA.created_by, `portal:${tenantA.subject}`, "marked as made through the portal");

  const list = (await (await server.request("/v1/webhooks/subscriptions", { token: tokenA })).json()) as {
    subscriptions: { id: string; tenant_id: string }[];
  };
  t.notOk(
    list.subscriptions.some((subscription) => subscription.id === subscriptionB.id),
    "B's subscription is not listed",
  );
  t.ok(list.subscriptions.every((subscription) => subscription.tenant_id === tenantA.tenantId));

  const deliveries = (await (await server.request("/v1/webhooks/deliveries", { token: tokenA })).json()) as {
    deliveries: unknown[];
    total: number;
  };
  t.equal(deliveries.total, 0, "B's delivery is not counted");
  t.same(deliveries.deliveries, []);

  const removed = await server.request(`/v1/webhooks/subscriptions/${subscriptionB.id}`, {
    method: "DELETE",
    token: tokenA,
  });
  t.equal(removed.status, 404, "B's subscription id answers as a missing one");
  const stillB = (await (await server.request("/v1/webhooks/subscriptions", { token: tenantB.token })).json()) as {
    subscriptions: { id: string }[];
  };
  t.ok(
    stillB.subscriptions.some((subscription) => subscription.id === subscriptionB.id),
    "and stays active",
  );

  const deliveriesB = (await (await server.request("/v1/webhooks/deliveries", { token: tenantB.token })).json()) as {
    deliveries: { id: string }[];
  };
  const deliveryB = deliveriesB.deliveries[0]?.id ?? "";
  t.ok(deliveryB, "B has a delivery");
  const attempts: [string, string][] = [
    ["GET", `/v1/webhooks/subscriptions/${subscriptionB.id}`],
    ["POST", `/v1/webhooks/subscriptions/${subscriptionB.id}/enable`],
    ["POST", `/v1/webhooks/subscriptions/${subscriptionB.id}/disable`],
    ["POST", `/v1/webhooks/subscriptions/${subscriptionB.id}/rotate-secret`],
    ["POST", `/v1/webhooks/subscriptions/${subscriptionB.id}/test`],
    ["GET", `/v1/webhooks/deliveries/${deliveryB}`],
    ["POST", `/v1/webhooks/deliveries/${deliveryB}/redeliver`],
    ["GET", `/v1/webhooks/deliveries?subscription_id=${subscriptionB.id}`],
  ];
  for (const [method, path] of attempts) {
    const res = await server.request(path, { method, token: tokenA });
    const body = (await res.json()) as { deliveries?: unknown[] };
    if (body.deliveries) t.same(body.deliveries, [], `${method} ${path}: nothing of B's`);
    else t.equal(res.status, 404, `${method} ${path}: 404 as a missing one`);
  }
  const afterB = (await (await server.request("/v1/webhooks/deliveries", { token: tenantB.token })).json()) as {
    deliveries: { id: string }[];
  };
  t.equal(afterB.deliveries.length, deliveriesB.deliveries.length, "no test event or redelivery was queued for B");
  const subscriptionAfter = (await (
    await server.request(`/v1/webhooks/subscriptions/${subscriptionB.id}`, { token: tenantB.token })
  ).json()) as { previous_secret_expires_at: string | null; status: string };
  t.equal(subscriptionAfter.previous_secret_expires_at, null, "B's secret was not rotated");
  t.equal(subscriptionAfter.status, "active", "B's subscription was not disabled");
});

t.test("the portal credential never reaches a log line", async (t) => {
  const before = text.length;
  const res = await portalLink(tenantA);
  const { url } = (await res.json()) as { url: string };
  const token = new URL(url).hash.replace(/^#token=/, "");
  await server.request("/v1/webhooks/subscriptions", { token });
  await server.request("/v1/webhooks/deliveries?limit=5", { token });
  await server.request("/v1/intake/submissions/" + crypto.randomUUID(), { token });
  await server.request(`/v1/webhooks/subscriptions?access_token=${token}&token=${token}`, { token });
  await server.request("/portal", { token });
  const logged = async () => text.slice(before).join("");
  const deadline = Date.now() + 5000;
  while ((await logged()).split("\n").filter(Boolean).length < 6 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  const output = await logged();
  t.ok(output.length > 0, "the requests were logged");
  const signature = token.split(".")[2] ?? "";
  t.notOk(output.includes(signature), "neither the credential nor its signature is in any line");
  t.notOk(output.includes(url), "nor the link");
});

t.test("/portal is served with a strict Content-Security-Policy and no inline script", async (t) => {
  const page = await server.request("/portal");
  t.equal(page.status, 200);
  t.match(page.headers.get("content-type"), /^text\/html/);
  const csp = page.headers.get("content-security-policy") ?? "";
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'(;|$)/);
  t.match(csp, /connect-src 'self'(;|$)/);
  t.match(csp, /frame-ancestors 'none'/, "not embeddable by default");
  t.equal(page.headers.get("x-frame-options"), "DENY");
  t.equal(page.headers.get("referrer-policy"), "no-referrer");
  const html = await page.text();
  t.notOk(/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), "every script has a src");
  t.notOk(/\b(src|href)="(https?:)?\/\//i.test(html), "nothing is loaded from another host");
  const script = await server.request("/portal/portal.js");
  t.equal(script.status, 200);
  t.match(script.headers.get("content-type"), /^text\/javascript/);
  t.equal((await server.request("/portal/portal.css")).status, 200);
  t.equal((await server.request("/portal/missing.js")).status, 404);
});

t.test("PORTAL_FRAME_ANCESTORS names the dashboards that may embed the page", async (t) => {
  const embedded = await startTestServer(t, {
    env: { PORTAL_FRAME_ANCESTORS: "'self' https://dashboard.example.com" },
  });
  const page = await embedded.request("/portal");
  t.match(page.headers.get("content-security-policy"), /frame-ancestors 'self' https:\/\/dashboard\.example\.com/);
  t.equal(page.headers.get("x-frame-options"), null, "X-Frame-Options would forbid the listed embedders");
  for (const bad of ["'none' https://a.example.com", "https://a.example.com; script-src *", "*", "javascript:x"]) {
    t.throws(() => loadConfig({ PORTAL_FRAME_ANCESTORS: bad }), ConfigError, `refused: ${bad}`);
  }
});
