// npm run mock (Prism) and the service answer the same request alike where Prism can: the same status and
// the same kind of body (a success, the error envelope, FastAPI's 422 list, an RFC 6749 error). Where
// Prism cannot, the answers differ exactly as docs/integrating.md ("The mock") lists, and both are held
// to that list: a difference that goes away, or a new one, fails here until the list says so.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import t from "tap";
import type { OpenAPIV3_1 } from "openapi-types";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";
import { startMock } from "../helpers/mock.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

/** What a request is answered with, by kind of body (not its words: the mock answers with the document's examples). */
type Kind = "success" | "error envelope" | "422 list" | "RFC 6749 error" | "Prism problem" | "no answer" | "other";

interface Answer {
  status: number;
  kind: Kind;
  headers: Record<string, string>;
}

interface Probe {
  what: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** undefined: neither Content-Length nor Transfer-Encoding (as curl -X POST sends it). */
  body?: string;
  /** Sends the service's token (the mock takes any bearer token). Default true. */
  token?: boolean;
}

const DOCS = fs.readFileSync(path.join(import.meta.dirname, "..", "..", "docs", "integrating.md"), "utf8");
const JSON_TYPE = { "Content-Type": "application/json" };
const ITEM = { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf" };
const SUBMIT = JSON.stringify(ITEM);
/** How long the mock may take to answer before it counts as not answering. */
const NO_ANSWER_MS = 5000;

/** One HTTP/1.1 request on a connection of its own, written as given: the answer's status, kind and headers. */
function send(baseUrl: string, probe: Probe, token: string): Promise<Answer> {
  const { port } = new URL(baseUrl);
  const headers: Record<string, string> = {
    Host: "127.0.0.1",
    Connection: "close",
    ...(probe.token === false ? {} : { Authorization: `Bearer ${token}` }),
    ...probe.headers,
    ...(probe.body === undefined ? {} : { "Content-Length": String(Buffer.byteLength(probe.body)) }),
  };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), "127.0.0.1", () =>
      socket.write(`${probe.method} ${probe.path} HTTP/1.1\r\n${head}\r\n${probe.body ?? ""}`),
    );
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.setTimeout(NO_ANSWER_MS, () => {
      socket.destroy();
      resolve({ status: 0, kind: "no answer", headers: {} });
    });
    socket.on("error", reject);
    socket.on("end", () => resolve(parse(Buffer.concat(chunks).toString("utf8"))));
  });
}

function parse(text: string): Answer {
  const split = text.indexOf("\r\n\r\n");
  const [statusLine = "", ...lines] = text.slice(0, split).split("\r\n");
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
  );
  let body = text.slice(split + 4);
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    let decoded = "";
    for (let size = parseInt(body, 16); size > 0; size = parseInt(body, 16)) {
      const start = body.indexOf("\r\n") + 2;
      decoded += body.slice(start, start + size);
      body = body.slice(start + size + 2);
    }
    body = decoded;
  }
  const status = Number(statusLine.split(" ")[1]);
  return { status, kind: kindOf(status, headers["content-type"] ?? "", body), headers };
}

function kindOf(status: number, contentType: string, body: string): Kind {
  if (contentType.startsWith("application/problem+json")) return "Prism problem";
  if (status >= 200 && status < 300) return "success";
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return "other";
  }
  const answer = parsed as { detail?: unknown; error?: unknown; request_id?: unknown };
  if (Array.isArray(answer.detail)) return "422 list";
  if (typeof answer.error === "string") return "RFC 6749 error";
  if (typeof answer.error === "object" && answer.error !== null && typeof answer.request_id === "string")
    return "error envelope";
  return "other";
}

/** The operations whose request body is required, with a path for each (any id: the body is judged first). */
function operationsRequiringABody(): { operationId: string; method: string; path: string; mediaType: string }[] {
  const document = loadDocument();
  const found = [];
  for (const [template, item] of Object.entries(document.paths ?? {})) {
    for (const method of ["post", "put", "patch"] as const) {
      const operation = (item as OpenAPIV3_1.PathItemObject)[method];
      const body = resolveRef(document, operation?.requestBody) as OpenAPIV3_1.RequestBodyObject | undefined;
      if (!operation?.operationId || body?.required !== true) continue;
      found.push({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        path: template.replace(/\{partner_key\}/, "benefits-co").replace(/\{[^}]+\}/g, crypto.randomUUID()),
        mediaType: Object.keys(body.content ?? {})[0] ?? "application/json",
      });
    }
  }
  return found;
}

t.test("the mock answers as the service does where Prism can, and differs only as documented", async (t) => {
  const [server, mock] = await Promise.all([
    startTestServer(t, { env: { WEBHOOK_MAX_SUBSCRIPTIONS_PER_TENANT: "100" } }),
    startMock(t),
  ]);
  const tenant = await createTestTenant(server.services);
  const subscribed = await server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: tenant.token,
    json: { url: "https://hooks.example.com/review", events: ["intake.submitted"] },
  });
  t.equal(subscribed.status, 201, "a subscription of the service's to act on");
  const subscription = `/v1/webhooks/subscriptions/${((await subscribed.json()) as { id: string }).id}`;

  const both = async (probe: Probe) => ({
    service: await send(server.baseUrl, probe, tenant.token),
    mock: await send(mock.baseUrl, probe, "any-token"),
  });

  t.test("alike: the same status and the same kind of body", async (t) => {
    const probes: Probe[] = [
      {
        what: "a body field the schema does not declare",
        method: "POST",
        path: "/v1/intake/submit",
        headers: JSON_TYPE,
        body: JSON.stringify({ ...ITEM, misspelt: 1 }),
      },
      {
        what: "a string for an integer",
        method: "POST",
        path: "/v1/intake/submit",
        headers: JSON_TYPE,
        body: JSON.stringify({ ...ITEM, file_size: "1" }),
      },
      { what: "an array for an object", method: "POST", path: "/v1/intake/submit", headers: JSON_TYPE, body: "[]" },
      {
        what: "a batch of 101 items",
        method: "POST",
        path: "/v1/intake/batch",
        headers: JSON_TYPE,
        body: JSON.stringify({ items: Array.from({ length: 101 }, () => ITEM) }),
      },
      {
        what: "a body of another media type",
        method: "POST",
        path: "/v1/intake/submit",
        headers: { "Content-Type": "text/plain" },
        body: "contract.pdf",
      },
      { what: "JSON for the token form", method: "POST", path: "/token", headers: JSON_TYPE, body: "{}", token: false },
      {
        what: "an empty token form",
        method: "POST",
        path: "/token",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: "",
        token: false,
      },
      { what: "no credential", method: "GET", path: "/v1/me", token: false },
      {
        what: "Basic instead of Bearer",
        method: "GET",
        path: "/v1/me",
        headers: { Authorization: "Basic YTpi" },
        token: false,
      },
      { what: "a limit that is no integer", method: "GET", path: "/v1/intake/submissions?limit=abc" },
      { what: "a limit below its minimum", method: "GET", path: "/v1/intake/submissions?limit=0" },
      { what: "a limit above its maximum", method: "GET", path: "/v1/intake/submissions?limit=1000" },
      { what: "a value outside an enum", method: "GET", path: "/v1/webhooks/deliveries?status=lost" },
      { what: "a tenant_id that is no UUID", method: "GET", path: "/v1/intake/submissions?tenant_id=acme" },
      { what: "a date-time that is none", method: "GET", path: "/v1/events?created_after=yesterday" },
      { what: "an unknown probe scope", method: "GET", path: "/v1/readyz?scope=everything", token: false },
      {
        what: "a POST without a body where none is declared",
        method: "POST",
        path: `${subscription}/rotate-secret`,
        body: "",
      },
      { what: "a POST without any body where one is optional", method: "POST", path: `${subscription}/test` },
      {
        what: "a POST without a body where one is optional",
        method: "POST",
        path: `${subscription}/disable`,
        body: "",
      },
      {
        what: "a POST without a body (portal session)",
        method: "POST",
        path: "/v1/webhooks/portal-sessions",
        body: "",
      },
      { what: "a submission", method: "POST", path: "/v1/intake/submit", headers: JSON_TYPE, body: SUBMIT },
    ];
    // A POST without a body where one is required, as curl -X POST (no length) and fetch (an empty body,
    // no Content-Type) send it, for every such operation.
    for (const operation of operationsRequiringABody()) {
      const token = operation.path !== "/token" && !operation.path.startsWith("/v1/callbacks/");
      probes.push(
        {
          what: `${operation.operationId} without any body`,
          method: operation.method,
          path: operation.path,
          headers: { "Content-Type": operation.mediaType },
          token,
        },
        {
          what: `${operation.operationId} with an empty body and no Content-Type`,
          method: operation.method,
          path: operation.path,
          body: "",
          token,
        },
      );
    }
    for (const probe of probes) {
      const { service, mock: mocked } = await both(probe);
      t.same(
        [mocked.status, mocked.kind],
        [service.status, service.kind],
        `${probe.what}: service ${service.status} ${service.kind}, mock ${mocked.status} ${mocked.kind}`,
      );
    }
  });

  t.test("apart: each difference as docs/integrating.md lists it", async (t) => {
    const section = DOCS.slice(DOCS.indexOf("## The mock"));
    t.ok(DOCS.includes("## The mock"), "docs/integrating.md has a section on the mock");
    const differences: [Probe, service: [number, Kind], mock: [number, Kind]][] = [
      [
        { what: "An unknown query parameter", method: "GET", path: "/v1/intake/submissions?colour=red" },
        [422, "422 list"],
        [200, "success"],
      ],
      [
        { what: "An empty query parameter", method: "GET", path: "/v1/intake/submissions?cursor=" },
        [422, "422 list"],
        [200, "success"],
      ],
      [
        { what: "An integer in another notation", method: "GET", path: "/v1/intake/submissions?limit=1e2" },
        [422, "422 list"],
        [200, "success"],
      ],
      [
        { what: "A cursor the service did not write", method: "GET", path: "/v1/intake/submissions?cursor=garbage" },
        [422, "422 list"],
        [200, "success"],
      ],
      [
        {
          what: "An empty `Idempotency-Key`",
          method: "POST",
          path: "/v1/intake/submit",
          headers: { ...JSON_TYPE, "Idempotency-Key": "" },
          body: SUBMIT,
        },
        [422, "error envelope"],
        [201, "success"],
      ],
      [
        {
          what: "An `Idempotency-Key` over 128 characters",
          method: "POST",
          path: "/v1/intake/submit",
          headers: { ...JSON_TYPE, "Idempotency-Key": "k".repeat(129) },
          body: SUBMIT,
        },
        [422, "error envelope"],
        [422, "422 list"],
      ],
      [
        {
          what: "A body that is not JSON",
          method: "POST",
          path: "/v1/intake/submit",
          headers: JSON_TYPE,
          body: "{not json",
        },
        [422, "422 list"],
        [0, "no answer"],
      ],
      [
        {
          what: "A body over 1 MiB",
          method: "POST",
          path: "/v1/intake/submit",
          headers: JSON_TYPE,
          body: JSON.stringify({ ...ITEM, item_metadata: { note: "x".repeat(1_100_000) } }),
        },
        [413, "error envelope"],
        [201, "success"],
      ],
      [
        {
          what: "A charset other than UTF-8",
          method: "POST",
          path: "/v1/intake/submit",
          headers: { "Content-Type": "application/json; charset=latin1" },
          body: SUBMIT,
        },
        [415, "error envelope"],
        [201, "success"],
      ],
      [
        { what: "An unknown route", method: "GET", path: "/v1/nothing-here" },
        [404, "error envelope"],
        [404, "Prism problem"],
      ],
      [
        { what: "An undeclared method", method: "PUT", path: "/v1/intake/submit" },
        [405, "error envelope"],
        [405, "Prism problem"],
      ],
      [
        {
          what: "An `Accept` the operation does not offer",
          method: "GET",
          path: "/v1/me",
          headers: { Accept: "text/html" },
        },
        [200, "success"],
        [406, "Prism problem"],
      ],
      [
        {
          what: "A bearer token that is not valid",
          method: "GET",
          path: "/v1/me",
          headers: { Authorization: "Bearer not-a-token" },
          token: false,
        },
        [401, "error envelope"],
        [200, "success"],
      ],
      [
        {
          what: "An API token where a portal credential is needed",
          method: "POST",
          path: "/v1/webhooks/portal-sessions/refresh",
          body: "",
        },
        [403, "error envelope"],
        [201, "success"],
      ],
      [
        {
          what: "A wrong password",
          method: "POST",
          path: "/token",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
          body: "grant_type=password&username=nobody&password=wrong-password",
          token: false,
        },
        [400, "RFC 6749 error"],
        [200, "success"],
      ],
      [
        { what: "An id that does not exist", method: "GET", path: `/v1/webhooks/subscriptions/${crypto.randomUUID()}` },
        [404, "error envelope"],
        [200, "success"],
      ],
    ];
    for (const [probe, service, mocked] of differences) {
      const answers = await both(probe);
      t.same(
        [answers.service.status, answers.service.kind],
        service,
        `${probe.what}: the service answers ${service.join(" ")}`,
      );
      t.same([answers.mock.status, answers.mock.kind], mocked, `${probe.what}: the mock answers ${mocked.join(" ")}`);
      t.ok(section.includes(`- ${probe.what}`), `${probe.what}: listed in docs/integrating.md`);
    }

    // CORS: the mock answers every origin; the service only those of CORS_ALLOWED_ORIGINS (none here).
    const preflight = await both({
      what: "A preflight from any origin",
      method: "OPTIONS",
      path: "/v1/intake/submit",
      headers: { Origin: "https://app.example.com", "Access-Control-Request-Method": "POST" },
      token: false,
    });
    t.equal(preflight.service.headers["access-control-allow-origin"], undefined, "the service: no CORS headers");
    t.equal(preflight.mock.headers["access-control-allow-origin"], "https://app.example.com", "the mock: any origin");
    t.ok(section.includes("- A preflight from any origin"), "CORS: listed in docs/integrating.md");
  });
});
