// A path parameter whose percent-encoding is malformed (`%ZZ`, a truncated UTF-8 sequence) is the
// operation's request: authenticated first, then refused with the issue at ["path", name], not under
// "body" with the whole URL as its loc.
import t from "tap";
import type { OpenAPIV3_1 } from "openapi-types";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

interface Issue {
  loc: (string | number)[];
  type: string;
  input?: unknown;
}

const MALFORMED = ["%E0%A4%A", "%ZZ", "%"];

t.test("malformed percent-encoding in a path parameter", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const document = loadDocument();
  let checked = 0;
  for (const [template, pathItem] of Object.entries(document.paths ?? {})) {
    for (const method of ["get", "put", "post", "delete", "patch"] as const) {
      const operation = (pathItem as OpenAPIV3_1.PathItemObject)[method];
      if (!operation) continue;
      const names = (operation.parameters ?? [])
        .map((raw) => resolveRef(document, raw) as OpenAPIV3_1.ParameterObject)
        .filter((parameter) => parameter.in === "path")
        .map((parameter) => parameter.name);
      const override = operation["x-validation-error" as keyof typeof operation] as { status?: number } | undefined;
      const secured = (operation.security ?? document.security ?? []).some((req) => Object.keys(req).length > 0);
      for (const name of names) {
        for (const text of MALFORMED) {
          checked++;
          const path = template.replace(`{${name}}`, text).replace(/\{[^}]+\}/g, "x");
          const where = `${method} ${path}`;
          const body = operation.requestBody ? { json: {} } : {};
          const res = await server.request(path, { method: method.toUpperCase(), token: tenant.token, ...body });
          const answer = (await res.json()) as { detail?: Issue[]; error?: { details?: { errors?: Issue[] } } };
          t.equal(res.status, override?.status ?? 422, where);
          const issues = answer.detail ?? answer.error?.details?.errors ?? [];
          t.same(
            issues.map((issue) => [issue.loc, issue.type, issue.input]),
            [[["path", name], "value_error", text]],
            where,
          );
          if (secured) {
            const anonymous = await server.request(path, { method: method.toUpperCase(), ...body });
            t.equal(anonymous.status, 401, `${where} without a token`);
          }
        }
      }
    }
  }
  t.ok(checked > 0);
});
