// What the document says of a request's input beyond what its schemas make the validator check
// (http/declared-input.ts), for every operation it concerns: a request without any body (or with an
// empty one and no Content-Type) where one is required is 422 missing at ["body"]; a body sent where none
// is declared is not read; a date-time parameter must name an instant; a query parameter must hold text
// PostgreSQL can store. Each is the operation's x-validation-error answer where it declares one.
import net from "node:net";
import t from "tap";
import type { OpenAPIV3_1 } from "openapi-types";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

interface Operation {
  operationId: string;
  method: string;
  template: string;
  parameters: OpenAPIV3_1.ParameterObject[];
  requestBody: OpenAPIV3_1.RequestBodyObject | undefined;
  override: { status: number } | undefined;
}

function operations(): Operation[] {
  const document = loadDocument();
  const found: Operation[] = [];
  for (const [template, item] of Object.entries(document.paths ?? {})) {
    const pathItem = item as OpenAPIV3_1.PathItemObject;
    for (const method of ["get", "put", "post", "delete", "patch"] as const) {
      const operation = pathItem[method];
      if (!operation?.operationId) continue;
      found.push({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        template,
        parameters: [...(pathItem.parameters ?? []), ...(operation.parameters ?? [])].map(
          (raw) => resolveRef(document, raw) as OpenAPIV3_1.ParameterObject,
        ),
        requestBody: resolveRef(document, operation.requestBody) as OpenAPIV3_1.RequestBodyObject | undefined,
        override: operation["x-validation-error" as keyof typeof operation] as { status: number } | undefined,
      });
    }
  }
  return found;
}

/** The operation's path with a made-up UUID for each path parameter. */
const pathOf = (operation: Operation) =>
  operation.template.replace(/\{[^}]+\}/g, "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69");

/** A raw HTTP/1.1 request (fetch sends no body with GET, and always a length or chunks with a body): the answer's status and body. */
function send(port: number, head: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () =>
      socket.write(
        `${head}\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
          (body === undefined ? "\r\n" : `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`),
      ),
    );
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    socket.on("end", () =>
      resolve({ status: Number(text.slice(9, 12)), body: text.slice(text.indexOf("\r\n\r\n") + 4) }),
    );
    socket.on("error", reject);
  });
}

/** The issues of a 422 list, or of the envelope an x-validation-error answer carries. */
async function issuesOf(res: Response): Promise<Issue[]> {
  const body = (await res.json()) as { detail?: Issue[]; error?: { details?: { errors?: Issue[] } } };
  return body.detail ?? body.error?.details?.errors ?? [];
}

t.test("declared input", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const port = Number(new URL(server.baseUrl).port);

  t.test("a request without any body where the document requires one is 422 missing at body", async (t) => {
    const required = operations().filter((operation) => operation.requestBody?.required === true);
    t.ok(required.length >= 5, `${required.length} operations require a body`);
    for (const operation of required) {
      const mediaType = Object.keys(operation.requestBody?.content ?? {})[0] ?? "application/json";
      const authorization = `Authorization: Bearer ${tenant.token}`;
      const request = `${operation.method} ${pathOf(operation)} HTTP/1.1\r\n${authorization}`;
      // Neither Content-Length nor Transfer-Encoding (curl -X POST), and an empty body without a
      // Content-Type (fetch's POST without a body): both are no body, not a body of the wrong media type.
      for (const [what, answer] of [
        ["no length", await send(port, `${request}\r\nContent-Type: ${mediaType}`)],
        ["empty, no Content-Type", await send(port, request, "")],
      ] as const) {
        const where = `${operation.operationId}, ${what}`;
        const body = JSON.parse(answer.body) as {
          detail?: Issue[];
          error?: string | { details?: { errors?: Issue[] } };
        };
        t.equal(answer.status, operation.override?.status ?? 422, `${where}: ${answer.status}`);
        const issues = body.detail ?? (typeof body.error === "object" ? body.error.details?.errors : undefined);
        // The token endpoint answers an RFC 6749 error instead (its x-validation-error says so).
        if (typeof body.error === "string") t.equal(body.error, "invalid_request", where);
        else t.same(issues, [{ loc: ["body"], msg: "Field required", type: "missing" }], `${where}: missing`);
      }
    }
  });

  t.test("a body sent to an operation that declares none is not read", async (t) => {
    for (const [what, body, type] of [
      ["text with a NUL", '"\\u0000"', "application/json"],
      ["a number JSON cannot hold", "1e400", "application/json"],
      ["a form with a NUL", "a=%00", "application/x-www-form-urlencoded"],
    ]) {
      for (const path of ["/v1/me", "/v1/health", "/.well-known/jwks.json"]) {
        const res = await send(
          port,
          `GET ${path} HTTP/1.1\r\nAuthorization: Bearer ${tenant.token}\r\nContent-Type: ${type}`,
          body,
        );
        t.equal(res.status, 200, `${path} with ${what}`);
      }
    }
  });

  t.test("a date-time parameter that names no instant is 422 value_error at its loc", async (t) => {
    const withDates = operations().filter((operation) =>
      operation.parameters.some((parameter) => (parameter.schema as { format?: string })?.format === "date-time"),
    );
    t.ok(withDates.length >= 3, `${withDates.length} operations take a date-time parameter`);
    for (const operation of withDates) {
      for (const parameter of operation.parameters.filter(
        (declared) => (declared.schema as { format?: string })?.format === "date-time",
      )) {
        for (const text of [
          "2026-02-30T00:00:00Z",
          "2025-02-29T00:00:00Z",
          "0000-01-01T00:00:00Z",
          "2026-01-01T25:00:00Z",
          "2026-01-01T00:00:00+99:00",
          "2026-13-01T00:00:00Z",
        ]) {
          const res = await server.request(`${pathOf(operation)}?${parameter.name}=${encodeURIComponent(text)}`, {
            method: operation.method,
            token: tenant.token,
          });
          const where = `${operation.operationId} ${parameter.name}=${text}`;
          t.equal(res.status, 422, where);
          t.match(await issuesOf(res), [{ loc: ["query", parameter.name], type: "value_error", input: text }], where);
        }
        for (const text of ["2024-02-29T00:00:00Z", "2026-01-01T00:00:00+23:59", "2026-01-01t00:00:00.1234567z"]) {
          const res = await server.request(`${pathOf(operation)}?${parameter.name}=${encodeURIComponent(text)}`, {
            method: operation.method,
            token: tenant.token,
          });
          t.equal(res.status, 200, `${operation.operationId} ${parameter.name}=${text} is an instant`);
        }
      }
    }
  });

  t.test("a NUL in a query parameter is 422 value_error at its loc", async (t) => {
    let checked = 0;
    for (const operation of operations()) {
      const mediaType = Object.keys(operation.requestBody?.content ?? {})[0];
      for (const parameter of operation.parameters.filter((declared) => declared.in === "query")) {
        checked++;
        const res = await server.request(`${pathOf(operation)}?${parameter.name}=a%00b`, {
          method: operation.method,
          token: tenant.token,
          ...(mediaType === undefined
            ? {}
            : { body: mediaType === "application/json" ? "{}" : "", headers: { "Content-Type": mediaType } }),
        });
        const where = `${operation.operationId} ${parameter.name}`;
        t.equal(res.status, operation.override?.status ?? 422, where);
        t.match(await issuesOf(res), [{ loc: ["query", parameter.name], type: "value_error" }], where);
      }
    }
    t.ok(checked >= 10, `${checked} query parameters`);
  });

  t.test("nothing unexpected was reported", async (t) => {
    t.same(server.errors.map(String), []);
  });
});
