// Integer parameters are parsed strictly, in one place for every operation: text that is not an optional
// sign and decimal digits ("Infinity", "1e400", "1e2", "0x10", " 7", "7.0") is 422 int_parsing at
// ["query", name], never coerced. Infinity once reached knex as a LIMIT, which knex drops: every delivery
// came back past the page cap of 200.
import t from "tap";
import type { OpenAPIV3_1 } from "openapi-types";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";
import { integerParameters } from "../../http/validation.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
}

const NOT_INTEGERS = ["Infinity", "-Infinity", "1e400", "1e2", "0x10", "0b11", " 7", "7 ", "7.0", "1.5", "ten", ""];

t.test("integer parameters", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);

  for (const text of NOT_INTEGERS) {
    t.test(`limit=${JSON.stringify(text)} is 422 int_parsing, not a page without a cap`, async (t) => {
      const res = await server.request(`/v1/webhooks/deliveries?limit=${encodeURIComponent(text)}`, {
        token: tenant.token,
      });
      t.equal(res.status, 422);
      const body = (await res.json()) as { detail: Issue[] };
      t.same(body.detail, [
        {
          loc: ["query", "limit"],
          msg: "Input should be a valid integer, unable to parse string as an integer",
          type: "int_parsing",
          input: text,
        },
      ]);
    });
  }

  t.test("digits with an optional sign are integers, bounds still apply", async (t) => {
    for (const text of ["1", "+5", "007", "200"]) {
      const res = await server.request(`/v1/webhooks/deliveries?limit=${encodeURIComponent(text)}`, {
        token: tenant.token,
      });
      t.equal(res.status, 200, text);
    }
    const over = await server.request("/v1/webhooks/deliveries?limit=99999999999999999999", { token: tenant.token });
    t.equal(over.status, 422);
    t.match(((await over.json()) as { detail: Issue[] }).detail, [
      { loc: ["query", "limit"], type: "less_than_equal" },
    ]);
  });

  t.test("the strict check is reported beside the validator's own findings", async (t) => {
    const res = await server.request("/v1/webhooks/deliveries?limit=Infinity&status=nope", { token: tenant.token });
    t.equal(res.status, 422);
    const body = (await res.json()) as { detail: Issue[] };
    t.same(
      body.detail.map((issue) => [issue.loc, issue.type]),
      [
        [["query", "limit"], "int_parsing"],
        [["query", "status"], "enum"],
      ],
    );
  });

  t.test("without a valid token nothing is said about parameters", async (t) => {
    const res = await server.request("/v1/webhooks/deliveries?limit=Infinity");
    t.equal(res.status, 401);
  });

  t.test("every integer parameter of every operation refuses Infinity", async (t) => {
    const document = loadDocument();
    let checked = 0;
    for (const [template, pathItem] of Object.entries(document.paths ?? {})) {
      for (const method of ["get", "put", "post", "delete", "patch"] as const) {
        const operation = (pathItem as OpenAPIV3_1.PathItemObject)[method];
        if (!operation) continue;
        const declared = integerParameters(
          [...((pathItem as OpenAPIV3_1.PathItemObject).parameters ?? []), ...(operation.parameters ?? [])],
          (value) => resolveRef(document, value),
        );
        if (declared.length === 0) continue;
        const path = declared.reduce(
          (url, [location, name]) => (location === "path" ? url.replace(`{${name}}`, "Infinity") : url),
          template.replace(/\{[^}]+\}/g, "x"),
        );
        const query = declared.filter(([location]) => location === "query").map(([, name]) => `${name}=Infinity`);
        const headers = Object.fromEntries(
          declared.filter(([location]) => location === "header").map(([, name]) => [name, "Infinity"]),
        );
        const res = await server.request(`${path}${query.length > 0 ? `?${query.join("&")}` : ""}`, {
          method: method.toUpperCase(),
          token: tenant.token,
          headers,
          ...(operation.requestBody ? { json: {} } : {}),
        });
        const text = await res.text();
        for (const [location, name] of declared) {
          checked++;
          t.match(text, JSON.stringify({ loc: [location, name] }).slice(1, -1), `${method} ${template} ${name}`);
          t.match(text, '"type":"int_parsing"', `${method} ${template} ${name}`);
        }
      }
    }
    t.ok(checked > 0, "the document declares integer parameters");
  });
});
