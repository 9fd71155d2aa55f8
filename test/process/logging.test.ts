// Logs: one JSON line per request with request_id, tenant, operationId, status and duration; tokens,
// passwords, secrets and signatures never appear in any line.
import { randomUUID } from "node:crypto";
import t from "tap";
import { createLogger, REDACTED, safeUrl } from "../../foundation/logger.ts";
import type { HandlerTable } from "../../http/operations.ts";
import { handlers } from "../../handlers/index.ts";
import { createTestTenant, createTestUser, startTestServer } from "../helpers/server.ts";

interface LogLine {
  level: string;
  msg: string;
  request_id?: string;
  tenant?: string;
  operationId?: string;
  status?: number;
  duration_ms?: number;
  req?: { method: string; url: string };
  err?: { message: string; headers?: Record<string, string>; body?: string };
  [key: string]: unknown;
}

function captureLogs() {
  const text: string[] = [];
  return {
    destination: { write: (line: string) => void text.push(line) },
    all: () => text.join(""),
    lines: (): LogLine[] =>
      text
        .join("")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as LogLine),
  };
}

/** The request line for `requestId`, once pino-http has written it (after the response finished). */
async function lineFor(logs: ReturnType<typeof captureLogs>, requestId: string): Promise<LogLine> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const line = logs.lines().find((entry) => entry.request_id === requestId && entry.status !== undefined);
    if (line) return line;
    if (Date.now() > deadline) throw new Error(`no log line for request ${requestId}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const failing: HandlerTable = {
  ...handlers,
  getJwks: async () => {
    throw Object.assign(new Error("the key store exploded"), {
      headers: { authorization: "Bearer leaked-in-an-error" },
      body: "password=leaked-body",
    });
  },
};

t.test("request logs", async (t) => {
  const logs = captureLogs();
  const server = await startTestServer(t, { logDestination: logs.destination, handlers: failing });
  const tenant = await createTestTenant(server.services);

  t.test(
    "a request's line carries request_id, tenant, operationId, status and duration, and never the bearer token",
    async (t) => {
      const requestId = `log-${randomUUID()}`;
      const res = await server.request(`/v1/intake/submissions/${randomUUID()}`, {
        token: tenant.token,
        headers: { "X-Request-Id": requestId },
      });
      t.equal(res.status, 404);
      const line = await lineFor(logs, requestId);
      t.equal(line.level, "info");
      t.equal(line.tenant, tenant.tenantId);
      t.equal(line.operationId, "getIntakeSubmission");
      t.equal(line.status, 404);
      t.type(line.duration_ms, "number");
      t.equal(line.req?.method, "GET");
      t.match(line.req?.url, /^\/v1\/intake\/submissions\//);
      t.notOk(logs.all().includes(tenant.token), "the token is in no line");
      t.notOk(logs.all().includes(tenant.token.split(".")[2] ?? "-"), "not even its signature part");
    },
  );

  t.test("a rejected token is not logged either", async (t) => {
    const requestId = `log-${randomUUID()}`;
    const res = await server.request("/v1/intake/submissions/x", {
      token: "guessed.token.value",
      headers: { "X-Request-Id": requestId },
    });
    t.equal(res.status, 401);
    const line = await lineFor(logs, requestId);
    t.equal(line.status, 401);
    t.equal(line.tenant, undefined);
    t.notOk(logs.all().includes("guessed.token.value"));
  });

  t.test("the password and client secret of a /token form are not logged", async (t) => {
    const user = await createTestUser(server.services, tenant.tenantId);
    const requestId = `log-${randomUUID()}`;
    const form = new URLSearchParams({ grant_type: "password", username: user.username, password: user.password });
    const res = await server.request("/token", {
      method: "POST",
      body: form.toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded", "X-Request-Id": requestId },
    });
    t.equal(res.status, 200);
    const { access_token: issued } = await res.json();
    const line = await lineFor(logs, requestId);
    t.equal(line.operationId, "issueToken");
    t.equal(line.status, 200);
    t.notOk(logs.all().includes(user.password), "the password is in no line");
    t.notOk(logs.all().includes(issued), "nor the issued access token");

    const secretForm = new URLSearchParams({
      grant_type: "client_credentials",
      client_id: "someone",
      client_secret: "client-secret-value",
    });
    await server.request("/token", {
      method: "POST",
      body: secretForm.toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    const basic = Buffer.from("someone:basic-secret-value").toString("base64");
    await server.request("/token", {
      method: "POST",
      body: "grant_type=client_credentials",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Basic ${basic}` },
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.notOk(logs.all().includes("client-secret-value"));
    t.notOk(logs.all().includes(basic));
  });

  t.test(
    "callback signatures (header, query and body) are not logged; the query value shows as redacted",
    async (t) => {
      const requestId = `log-${randomUUID()}`;
      const res = await server.request("/v1/callbacks/partner/acme?signature=sig-in-query&x=1", {
        method: "POST",
        json: { tenant_id: tenant.tenantId, payload: { event: "x" }, signature: "sig-in-body" },
        headers: { "X-Callback-Signature": "sig-in-header", "X-Request-Id": requestId },
      });
      await res.arrayBuffer();
      const line = await lineFor(logs, requestId);
      t.equal(line.operationId, "receivePartnerCallback");
      t.equal(line.req?.url, `/v1/callbacks/partner/acme?signature=${REDACTED}&x=1`);
      for (const signature of ["sig-in-query", "sig-in-header", "sig-in-body"])
        t.notOk(logs.all().includes(signature), `${signature} is in no line`);
    },
  );

  t.test(
    "an unexpected error is logged once at error level with its request's id and operation, its secrets redacted",
    async (t) => {
      const requestId = `log-${randomUUID()}`;
      const res = await server.request("/.well-known/jwks.json", { headers: { "X-Request-Id": requestId } });
      t.equal(res.status, 500);
      t.notMatch(await res.text(), /exploded/, "not in the response");
      const errorLine = logs
        .lines()
        .find((entry) => entry.request_id === requestId && entry.msg === "unexpected error");
      t.ok(errorLine, "an error line");
      t.equal(errorLine?.level, "error");
      t.equal(errorLine?.operationId, "getJwks");
      t.equal(errorLine?.err?.message, "the key store exploded");
      t.equal(errorLine?.err?.headers?.authorization, REDACTED);
      t.equal(errorLine?.err?.body, REDACTED);
      t.notOk(logs.all().includes("leaked-in-an-error"));
      t.notOk(logs.all().includes("leaked-body"));
      const requestLine = await lineFor(logs, requestId);
      t.equal(requestLine.level, "error");
      t.equal(requestLine.status, 500);
    },
  );

  t.test("probes answered 200 log at debug, not info", async (t) => {
    const requestId = `log-${randomUUID()}`;
    await (await server.request("/v1/health", { headers: { "X-Request-Id": requestId } })).arrayBuffer();
    t.equal((await lineFor(logs, requestId)).level, "debug");
  });
});

t.test("any logged object has its credentials redacted, up to five levels deep", async (t) => {
  const logs = captureLogs();
  const logger = createLogger({ level: "info", destination: logs.destination });
  logger.info(
    {
      password: "p0",
      headers: {
        authorization: "Bearer t1",
        cookie: "session=c1",
        "x-service-review-signature": "s1",
        "x-callback-signature": "s2",
      },
      form: { client_secret: "cs1", access_token: "at1" },
      a: { b: { c: { d: { secret: "deep-secret", signature: "deep-signature" } } } },
      kept: "visible",
    },
    "redaction",
  );
  const text = logs.all();
  for (const value of ["p0", "t1", "c1", "s1", "s2", "cs1", "at1", "deep-secret", "deep-signature"])
    t.notOk(text.includes(`"${value}"`) || text.includes(value + '"'), `${value} redacted`);
  t.match(text, /"kept":"visible"/);
  const [line] = logs.lines();
  t.equal(line?.password, REDACTED);
});

t.test("safeUrl masks sensitive query parameters and keeps the rest", async (t) => {
  t.equal(safeUrl("/v1/x"), "/v1/x");
  t.equal(safeUrl("/v1/x?signature=abc&limit=5"), `/v1/x?signature=${REDACTED}&limit=5`);
  t.equal(safeUrl("/cb?Signature=abc"), `/cb?Signature=${REDACTED}`);
  t.equal(safeUrl("/cb?access_token=abc&sig%6Eature=x"), `/cb?access_token=${REDACTED}&sig%6Eature=${REDACTED}`);
});
