// integrator.webhook_event_data_problem (db/functions/webhook_event_data_problem.sql) against the document:
// its field table is written by hand, and these cases, derived from the document alone, fail when it lags.
// For every subscribable kind the SQL check knows the same fields as the kind's data schema, and accepts
// exactly the data the document's webhooks schema accepts: the kind's example, the example with every field,
// and that with each field left out, null, given a value of another type, or joined by a field of another
// kind.
import t from "tap";
import type { Knex } from "knex";
import document from "../../generated/openapi.json" with { type: "json" };
import { createDatabase } from "../../db/database.ts";
import { isEventKind } from "../../db/events.ts";
import { examplePayload } from "../../handlers/webhooks/example-events.ts";
import { documentedEventKinds, type DocumentedEventKind } from "../../scripts/event-kinds.ts";
import { isRecord, resolvePointer } from "../../scripts/openapi-source.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { webhookSchemaErrors } from "../helpers/webhook-schemas.ts";

const kinds = documentedEventKinds(document);

let db: Knex;
t.before(async () => {
  db = createDatabase(await createTestDatabase(t), 1, "integrator-test");
  t.teardown(() => db.destroy());
});

/** The properties of a component schema, each resolved when it is a $ref. */
function propertiesOf(schema: string): Map<string, Record<string, unknown>> {
  const node = resolvePointer(document, `#/components/schemas/${schema}`);
  const properties = isRecord(node) && isRecord(node.properties) ? node.properties : {};
  return new Map(
    Object.entries(properties).map(([name, property]) => {
      const resolved =
        isRecord(property) && typeof property.$ref === "string" ? resolvePointer(document, property.$ref) : property;
      return [name, isRecord(resolved) ? resolved : {}];
    }),
  );
}

/** The data of the kind's example in the `webhooks` section. */
function exampleData(kind: string): Record<string, unknown> {
  if (!isEventKind(kind)) throw new Error(`generated/event-kinds.ts lacks ${kind}: run npm run generate`);
  return examplePayload(kind, "evt_x", "tenant", "2026-01-01T00:00:00.000Z").data;
}

/** Every value the examples give a field, by field name: what a field an example leaves out is given. */
const exampleValues = new Map<string, unknown>();
for (const { kind } of kinds)
  for (const [name, value] of Object.entries(exampleData(kind)))
    if (!exampleValues.has(name)) exampleValues.set(name, value);

/** Values of every JSON type, and of the shapes the SQL check tells apart (UUIDs, whole numbers of at least 0). */
const OTHER_VALUES: unknown[] = [
  null,
  0,
  42,
  -1,
  1.5,
  "1",
  true,
  "",
  "text",
  "not-a-uuid",
  "0192f0d2-4a6b-7c8d-9e0f-a1b2c3d4e5f6",
  "0192F0D2-4A6B-7C8D-9E0F-A1B2C3D4E5F6",
  {},
  [],
];

interface Case {
  kind: string;
  data: unknown;
}

/** The cases of one kind, derived from its data schema and the examples. */
function casesOf({ kind, dataSchema }: DocumentedEventKind): Case[] {
  const fields = propertiesOf(dataSchema);
  const example = exampleData(kind);
  const full: Record<string, unknown> = {};
  for (const name of fields.keys()) {
    if (!(name in example) && !exampleValues.has(name))
      throw new Error(`no example gives ${dataSchema}.${name} a value: add it to an example of the webhooks section`);
    full[name] = name in example ? example[name] : exampleValues.get(name);
  }
  const cases: Case[] = [
    { kind, data: example },
    { kind, data: full },
  ];
  for (const [name, schema] of fields) {
    const { [name]: _left, ...without } = full;
    cases.push({ kind, data: without });
    const values = [...OTHER_VALUES, ...(Array.isArray(schema.enum) ? schema.enum : [])];
    for (const value of values) cases.push({ kind, data: { ...full, [name]: value } });
  }
  const otherFields = kinds
    .flatMap((other) => [...propertiesOf(other.dataSchema).keys()])
    .filter((name) => !fields.has(name));
  for (const name of new Set([...otherFields, "filename"])) cases.push({ kind, data: { ...full, [name]: "text" } });
  for (const data of [null, [], "text", 1]) cases.push({ kind, data });
  return cases;
}

t.test("the SQL check's field table names, for each kind, the fields of the kind's data schema", async (t) => {
  const { rows } = await db.raw<{ rows: { source: string }[] }>(
    "select prosrc as source from pg_proc where oid = 'integrator.webhook_event_data_problem(text, jsonb)'::regprocedure",
  );
  const source = rows[0]?.source ?? "";
  const table: Record<string, string[]> = {};
  for (const [, kind, fields] of source.matchAll(/when '([^']+)' then '(\{[^']*\})'/g))
    if (kind !== undefined && fields !== undefined)
      table[kind] = Object.keys(JSON.parse(fields) as Record<string, unknown>).sort();
  t.same(
    table,
    Object.fromEntries(kinds.map(({ kind, dataSchema }) => [kind, [...propertiesOf(dataSchema).keys()].sort()])),
  );
});

t.test("the SQL check accepts exactly the data the document's webhooks schema accepts, kind by kind", async (t) => {
  const cases = [...kinds.flatMap(casesOf), { kind: "scorecard.deleted", data: {} }];
  const { rows } = await db.raw<{ rows: { problem: string | null }[] }>(
    `select integrator.webhook_event_data_problem(c.value->>'kind', c.value->'data') as problem
       from jsonb_array_elements(?::jsonb) with ordinality as c order by c.ordinality`,
    [JSON.stringify(cases)],
  );
  t.equal(rows.length, cases.length);
  const disagreements: string[] = [];
  let accepted = 0;
  for (const [index, { kind, data }] of cases.entries()) {
    const problem = rows[index]?.problem ?? null;
    const envelope = {
      id: "evt_0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a70",
      event: kind,
      tenant_id: "0192f0b1-2c3d-7e4f-8a5b-6c7d8e9f0a1b",
      timestamp: "2026-11-21T23:40:06.645Z",
      data,
    };
    const documentAccepts = webhookSchemaErrors(kind, envelope).length === 0;
    if (documentAccepts) accepted++;
    if (documentAccepts !== (problem === null))
      disagreements.push(
        `${kind} ${JSON.stringify(data)}: the document ${documentAccepts ? "accepts" : "refuses"} it, the SQL check ${problem === null ? "accepts it" : `says ${problem}`}`,
      );
  }
  t.same(disagreements, [], `${cases.length} cases`);
  t.ok(accepted >= kinds.length * 2 && accepted < cases.length / 2, `${accepted} of ${cases.length} are valid data`);
});
