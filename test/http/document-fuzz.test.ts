// Hostile input derived from the document: every operation of generated/openapi.json gets hostile values in
// each of its parameters (path, query, header) and each of its request body's fields (dates that cannot
// exist, integers huge, negative or fractional, text with a NUL or an unpaired surrogate, very long text, a
// forged cursor), and hostile bodies (absent, empty, not an object, malformed, of another media type), with
// a valid token of this file's tenant. Whatever the answer, it is never a 5xx, and the server reports no
// unexpected error.
//
// One value of each kind goes to each field, picked by a hash of the operation, the field and the kind, so
// every run sends the same requests and every value of a kind is used somewhere. Requests go over raw
// sockets: an absent body (no Content-Length, no Transfer-Encoding, as `curl -X PATCH` sends) and bytes
// that fetch refuses to send are part of what is tried.
import { randomUUID } from "node:crypto";
import net from "node:net";
import t from "tap";
import type { OpenAPIV3_1 } from "openapi-types";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";
import { createTestPartner, signCallback } from "../helpers/partners.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

type Node = Record<string, unknown>;
type Kind = "date" | "integer" | "nul" | "surrogate" | "long" | "cursor";

/** One hostile value in the three forms it is sent in. */
interface Hostile {
  kind: Kind;
  /** As JSON text (a literal such as 1e400 that JSON.stringify could not write included). */
  json: string;
  /** As it appears in a URL or a form body: percent-encoded. */
  text: string;
  /** As the bytes of a header value. */
  header: Buffer;
}

const forgedCursor = (createdAt: string) =>
  Buffer.from(JSON.stringify({ c: createdAt, i: "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69" }), "utf8").toString(
    "base64url",
  );

const IMPOSSIBLE_DATES = [
  "2026-02-30T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "2026-01-01T00:00:00+99:00",
  "2026-01-01T25:00:00Z",
  "2026-13-01T00:00:00Z",
];

const plainText = (kind: Kind, value: string): Hostile => ({
  kind,
  json: JSON.stringify(value),
  text: encodeURIComponent(value),
  header: Buffer.from(value, "utf8"),
});

const HOSTILE: Record<Kind, Hostile[]> = {
  date: IMPOSSIBLE_DATES.map((date) => plainText("date", date)),
  integer: ["99999999999999999999999", "-1", "1.5", "1e400", "-9007199254740993"].map((literal) => ({
    kind: "integer",
    json: literal,
    text: literal,
    header: Buffer.from(literal, "latin1"),
  })),
  nul: [
    { kind: "nul", json: JSON.stringify("a\u0000b"), text: "a%00b", header: Buffer.from([0x61, 0x00, 0x62]) },
    { kind: "nul", json: JSON.stringify("\u0000"), text: "%00", header: Buffer.from([0x00]) },
  ],
  // A lone surrogate has no UTF-8 form: in a URL or a header it can only be the bytes that would encode it.
  surrogate: [
    { kind: "surrogate", json: JSON.stringify("\ud800"), text: "%ED%A0%80", header: Buffer.from([0xed, 0xa0, 0x80]) },
    {
      kind: "surrogate",
      json: JSON.stringify("x\udc00"),
      text: "x%ED%B0%80",
      header: Buffer.from("x\xed\xb0\x80", "latin1"),
    },
  ],
  long: [
    {
      kind: "long",
      json: JSON.stringify("x".repeat(100_000)),
      text: "x".repeat(6000),
      header: Buffer.from("x".repeat(6000)),
    },
  ],
  cursor: ["2026-02-30T00:00:00.000000Z", "0000-01-01T00:00:00.000000Z"].map((date) =>
    plainText("cursor", forgedCursor(date)),
  ),
};
const KINDS = Object.keys(HOSTILE) as Kind[];

/** FNV-1a: the same pick on every run. */
function hash(text: string): number {
  let value = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) value = Math.imul(value ^ text.charCodeAt(index), 0x01000193);
  return value >>> 0;
}

/** One value of each kind for the field named `place`. */
function hostileFor(place: string): Hostile[] {
  return KINDS.map((kind) => {
    const values = HOSTILE[kind];
    return values[hash(`${place} ${kind}`) % values.length] as Hostile;
  });
}

interface Answer {
  status: number;
  text: string;
}

interface RawRequest {
  method: string;
  target: string;
  headers: [string, string | Buffer][];
  /** undefined: no body at all, neither Content-Length nor Transfer-Encoding. */
  body?: Buffer;
}

/** One request on a connection of its own; the answer's status (0 when none came) and text. */
function send(port: number, request: RawRequest): Promise<Answer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, "127.0.0.1");
    const settle = () => {
      const text = Buffer.concat(chunks).toString("latin1");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text: text.slice(0, 600) });
    };
    socket.setTimeout(20_000, () => socket.destroy());
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    // The server may close at once after refusing a request it did not read to its end.
    socket.on("error", () => undefined);
    socket.on("close", settle);
    const lines: Buffer[] = [
      Buffer.from(`${request.method} ${request.target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n`),
      ...request.headers.map(([name, value]) =>
        Buffer.concat([
          Buffer.from(`${name}: `),
          typeof value === "string" ? Buffer.from(value) : value,
          Buffer.from("\r\n"),
        ]),
      ),
      Buffer.from(request.body === undefined ? "\r\n" : `Content-Length: ${request.body.length}\r\n\r\n`),
    ];
    if (request.body !== undefined) lines.push(request.body);
    socket.write(Buffer.concat(lines));
  });
}

/** A body field: its path below the body, and what it is called in a report. */
interface Field {
  path: (string | number)[];
  name: string;
}

/** Every field a body schema names: object properties, list items (at index 0), a free-form object's key. */
function fieldsOf(document: OpenAPIV3_1.Document, schema: unknown, path: (string | number)[] = []): Field[] {
  const resolved = resolveRef(document, schema) as Node | undefined;
  if (!resolved || path.length > 5) return [];
  const fields: Field[] = [];
  for (const branch of ["allOf", "anyOf", "oneOf"] as const)
    for (const member of (resolved[branch] as unknown[] | undefined) ?? [])
      fields.push(...fieldsOf(document, member, path));
  for (const [name, property] of Object.entries((resolved.properties as Node | undefined) ?? {})) {
    const at = [...path, name];
    fields.push({ path: at, name: at.join(".") }, ...fieldsOf(document, property, at));
  }
  const additional = resolved.additionalProperties;
  if (additional === true || (additional && typeof additional === "object")) {
    const at = [...path, "fuzz_key"];
    fields.push({ path: at, name: at.join(".") }, ...fieldsOf(document, additional, at));
  }
  if (resolved.items) {
    const at = [...path, 0];
    fields.push({ path: at, name: at.join(".") }, ...fieldsOf(document, resolved.items, at));
  }
  const seen = new Set<string>();
  return fields.filter((field) => !seen.has(field.name) && seen.add(field.name));
}

/** The JSON text of `body` with the value at `path` replaced by the JSON text `json` (containers made as needed). */
function withField(body: unknown, path: (string | number)[], json: string): string {
  const marker = `__hostile_${randomUUID()}__`;
  const root: unknown = structuredClone(body ?? {});
  let container = (root && typeof root === "object" ? root : {}) as Record<string | number, unknown>;
  const top = container;
  path.forEach((key, index) => {
    if (index === path.length - 1) {
      container[key] = marker;
      return;
    }
    const next = path[index + 1];
    const current = container[key];
    const wanted = typeof next === "number" ? Array.isArray(current) : current && typeof current === "object";
    if (!wanted) container[key] = typeof next === "number" ? [] : {};
    container = container[key] as Record<string | number, unknown>;
  });
  return JSON.stringify(top).replace(JSON.stringify(marker), json);
}

/** A form body (application/x-www-form-urlencoded) of the baseline with one field's text replaced. */
function formOf(body: Node, replace?: { name: string; text: string }): string {
  const pairs = Object.entries(body).map(([name, value]) => [name, encodeURIComponent(String(value))]);
  if (replace) {
    const found = pairs.find(([name]) => name === replace.name);
    if (found) found[1] = replace.text;
    else pairs.push([replace.name, replace.text]);
  }
  return pairs.map(([name, text]) => `${encodeURIComponent(name ?? "")}=${text}`).join("&");
}

interface OperationCase {
  operationId: string;
  method: string;
  template: string;
  parameters: OpenAPIV3_1.ParameterObject[];
  bodyMedia: string | undefined;
  bodySchema: unknown;
  bodyExample: unknown;
}

function operationsOf(document: OpenAPIV3_1.Document): OperationCase[] {
  const cases: OperationCase[] = [];
  for (const [template, rawItem] of Object.entries(document.paths ?? {})) {
    const pathItem = rawItem as OpenAPIV3_1.PathItemObject;
    for (const method of ["get", "put", "post", "delete", "patch"] as const) {
      const operation = pathItem[method];
      if (!operation?.operationId) continue;
      const parameters = [...(pathItem.parameters ?? []), ...(operation.parameters ?? [])].map(
        (raw) => resolveRef(document, raw) as OpenAPIV3_1.ParameterObject,
      );
      const requestBody = resolveRef(document, operation.requestBody) as OpenAPIV3_1.RequestBodyObject | undefined;
      const [bodyMedia, media] = Object.entries(requestBody?.content ?? {})[0] ?? [];
      const example =
        media?.example ??
        (resolveRef(document, Object.values(media?.examples ?? {})[0]) as { value?: unknown } | undefined)?.value;
      cases.push({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        template,
        parameters,
        bodyMedia,
        bodySchema: media?.schema,
        bodyExample: example,
      });
    }
  }
  // Deleting comes last, so that the fixtures it removes serve every other operation first.
  return cases.sort((a, b) => Number(a.method === "DELETE") - Number(b.method === "DELETE"));
}

t.test("no hostile parameter or body makes any operation answer 5xx", async (t) => {
  const server = await startTestServer(t);
  const port = Number(new URL(server.baseUrl).port);
  const tenant = await createTestTenant(server.services);
  const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
  const document = loadDocument();

  // Real resources, so that a request with hostile values elsewhere reaches its operation's handler.
  const json = async (path: string, init: RequestInit & { json?: unknown; token?: string } = {}) => {
    const res = await server.request(path, { token: tenant.token, ...init });
    t.ok(res.status < 300, `fixture ${init.method ?? "GET"} ${path}: ${res.status}`);
    return (await res.json()) as Node;
  };
  const subscription = await json("/v1/webhooks/subscriptions", {
    method: "POST",
    json: { url: "https://hooks.example.com/fuzz", events: ["*"] },
  });
  const submission = await json("/v1/intake/submit", {
    method: "POST",
    json: { filename: "fuzz.pdf", file_size: 1, mime_type: "application/pdf" },
  });
  const [delivery] = (await json("/v1/webhooks/deliveries")).deliveries as Node[];
  const [event] = (await json("/v1/events")).events as Node[];
  const portalUrl = String((await json("/v1/webhooks/portal-sessions", { method: "POST" })).url);
  const portalCredential = new URL(portalUrl).hash.replace(/^#token=/, "");
  const pathValues: Record<string, string> = {
    submission_id: String(submission.id),
    subscription_id: String(subscription.id),
    delivery_id: String(delivery?.id),
    event_id: String(event?.id),
    partner_key: partner.partnerKey,
  };

  const failures: string[] = [];
  let sent = 0;
  const started = Date.now();
  const cpu = process.cpuUsage();

  for (const operation of operationsOf(document)) {
    const { operationId, method, template, parameters } = operation;
    const isForm = operation.bodyMedia === "application/x-www-form-urlencoded";
    const isCallback = operationId === "receivePartnerCallback";
    const baseline: Node =
      isCallback && operation.bodyExample && typeof operation.bodyExample === "object"
        ? { ...(operation.bodyExample as Node), tenant_id: tenant.tenantId }
        : ((operation.bodyExample ?? {}) as Node);
    const credential = operationId === "refreshWebhookPortalSession" ? portalCredential : tenant.token;

    const requestOf = (change: {
      parameter?: { in: string; name: string; value: Hostile };
      body?: Buffer | null;
      contentType?: string | null;
    }): RawRequest => {
      const { parameter } = change;
      let path = template;
      for (const declared of parameters.filter((p) => p.in === "path")) {
        const hostile = parameter?.in === "path" && parameter.name === declared.name;
        path = path.replace(
          `{${declared.name}}`,
          hostile ? parameter.value.text : encodeURIComponent(pathValues[declared.name] ?? "x"),
        );
      }
      const query = parameter?.in === "query" ? `?${encodeURIComponent(parameter.name)}=${parameter.value.text}` : "";
      const headers: [string, string | Buffer][] = [["Authorization", `Bearer ${credential}`]];
      const body =
        change.body === null
          ? undefined
          : (change.body ??
            (operation.bodyMedia === undefined
              ? undefined
              : Buffer.from(isForm ? formOf(baseline) : JSON.stringify(baseline), "utf8")));
      const contentType = change.contentType === undefined ? operation.bodyMedia : change.contentType;
      if (contentType !== undefined && contentType !== null) headers.push(["Content-Type", contentType]);
      if (isCallback && body !== undefined && parameter?.name !== "X-Callback-Signature") {
        try {
          const parsed = JSON.parse(body.toString("utf8")) as { tenant_id: string; payload: unknown };
          headers.push(["X-Callback-Signature", signCallback(partner.callbackSecret, partner.partnerKey, parsed)]);
        } catch {
          // Not JSON: nothing to sign.
        }
      }
      if (parameter?.in === "header") headers.push([parameter.name, parameter.value.header]);
      return { method, target: `${path}${query}`, headers, ...(body === undefined ? {} : { body }) };
    };

    const cases: { what: string; request: RawRequest }[] = [];
    for (const parameter of parameters) {
      for (const value of hostileFor(`${operationId} ${parameter.in} ${parameter.name}`))
        cases.push({
          what: `${parameter.in} ${parameter.name} ${value.kind} ${value.text.slice(0, 40)}`,
          request: requestOf({ parameter: { in: parameter.in, name: parameter.name, value } }),
        });
    }
    if (operation.bodyMedia !== undefined) {
      for (const field of fieldsOf(document, operation.bodySchema)) {
        for (const value of hostileFor(`${operationId} body ${field.name}`)) {
          const [first] = field.path;
          const body = isForm
            ? field.path.length === 1
              ? formOf(baseline, { name: String(first), text: value.text })
              : undefined
            : withField(baseline, field.path, value.json);
          if (body !== undefined)
            cases.push({
              what: `body ${field.name} ${value.kind} ${value.json.slice(0, 40)}`,
              request: requestOf({ body: Buffer.from(body, "utf8") }),
            });
        }
      }
    }
    // Bodies of every shape where the operation takes one; where it takes none, a few it must not judge.
    const bodies: [string, Buffer | null, string | null][] =
      operation.bodyMedia === undefined
        ? [
            ["a string with a NUL", Buffer.from('"\\u0000"'), "application/json"],
            ["a number JSON cannot hold", Buffer.from("1e400"), "application/json"],
            ["a form with a NUL", Buffer.from("a=%00"), "application/x-www-form-urlencoded"],
          ]
        : [
            ["absent body", null, operation.bodyMedia],
            ["absent body without a content type", null, null],
            ["empty body", Buffer.alloc(0), operation.bodyMedia],
            ["null", Buffer.from("null"), "application/json"],
            ["a list", Buffer.from("[]"), "application/json"],
            ["a string with a NUL", Buffer.from('"\\u0000"'), "application/json"],
            ["a number JSON cannot hold", Buffer.from("1e400"), "application/json"],
            ["malformed JSON", Buffer.from('{"a":'), "application/json"],
            ["text/plain", Buffer.from("hello"), "text/plain"],
            ["XML", Buffer.from("<a/>"), "application/xml"],
            ["multipart", Buffer.from("--x\r\n\r\n--x--"), "multipart/form-data; boundary=x"],
            ["a form with a NUL", Buffer.from("a=%00"), "application/x-www-form-urlencoded"],
            ["an unknown charset", Buffer.from("{}"), "application/json; charset=ebcdic"],
          ];
    for (const [what, body, contentType] of bodies) cases.push({ what, request: requestOf({ body, contentType }) });

    // A few connections at a time: the server sees concurrent requests, the machine is not flooded.
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let index = next++; index < cases.length; index = next++) {
          const { what, request } = cases[index] as (typeof cases)[number];
          const answer = await send(port, request);
          sent++;
          // Readiness answers 503 while a dependency is not ready (no worker runs beside this server): its state.
          const documented = operationId === "getReadiness" && answer.status === 503;
          if (answer.status === 0 || (answer.status >= 500 && !documented))
            failures.push(
              `${operationId} (${method} ${template}) ${what}: ${answer.status} ${answer.text.split("\r\n\r\n")[1] ?? ""}`,
            );
        }
      }),
    );
  }

  const { user, system } = process.cpuUsage(cpu);
  t.comment(`${sent} requests in ${Date.now() - started} ms, ${Math.round((user + system) / 1000)} ms of CPU`);
  t.ok(sent > 500, `every operation was sent hostile input (${sent} requests)`);
  t.same(failures, [], "no answer is a 5xx");
  t.same(server.errors.map(String), [], "no unexpected error was reported");
});
