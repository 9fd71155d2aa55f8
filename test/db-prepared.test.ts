// Named prepared statements (db/prepared.ts): the hot statements are prepared once per connection and
// reused, and a name never stands for two texts.
import t from "tap";
import { createDatabase } from "../db/database.ts";
import { emitEvent } from "../db/events.ts";
import { insertSubmissionWithEvent } from "../db/intake.ts";
import { preparedRaw } from "../db/prepared.ts";
import { createTenant } from "../db/principals.ts";
import { createTestDatabase } from "./helpers/database.ts";

t.test("a submit and an event are prepared statements of their connection, parsed once and run again", async (t) => {
  // One connection, so that every call below meets the statements the previous ones prepared.
  const db = createDatabase(await createTestDatabase(t), 1, "integrator-test");
  t.teardown(() => db.destroy());
  const tenant = await createTenant(db, "prepared statements");
  const submit = (reference: string) =>
    insertSubmissionWithEvent(
      db,
      {
        tenantId: tenant.id,
        kind: "single",
        externalReference: reference,
        module: null,
        tier: null,
        status: "received",
        acceptedCount: 1,
        failedCount: 0,
        createdBy: "test",
        requestId: "req",
      },
      [
        {
          filename: "a.pdf",
          file_size: 1,
          mime_type: "application/pdf",
          item_metadata: {},
          status: "uploaded",
          error_message: null,
        },
      ],
      { action: "intake.submitted", actor: "test", requestId: "req", details: {} },
    );
  const first = await submit("first");
  const second = await submit("second");
  t.not(first.id, second.id);
  t.equal(second.external_reference, "second", "the second call ran with its own arguments");
  t.equal(await emitEvent(db, tenant.id, "scorecard.created", { scorecard_id: crypto.randomUUID() }), 0);

  const { rows } = await db.raw<{
    rows: { name: string; statement: string; generic_plans: number; custom_plans: number }[];
  }>(
    "select name, statement, generic_plans, custom_plans from pg_prepared_statements where name in ('submit_intake', 'emit_event') order by name",
  );
  t.same(
    rows.map((row) => row.name),
    ["emit_event", "submit_intake"],
    "both are prepared on the connection",
  );
  const submitStatement = rows.find((row) => row.name === "submit_intake");
  t.match(submitStatement?.statement, /integrator\.submit_intake\(\$1, /, "with the text knex wrote");
  t.equal(
    Number(submitStatement?.generic_plans) + Number(submitStatement?.custom_plans),
    2,
    "prepared once and executed twice",
  );
});

t.test("a name given a second text is refused before anything is sent", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 1, "integrator-test");
  t.teardown(() => db.destroy());
  t.same((await preparedRaw<{ rows: { n: number }[] }>(db, "test_one_text", "select ?::int as n", [1])).rows, [
    { n: 1 },
  ]);
  t.throws(
    () => preparedRaw(db, "test_one_text", "select ?::int + 1 as n", [1]),
    /test_one_text was given a second text/,
  );
  t.same((await preparedRaw<{ rows: { n: number }[] }>(db, "test_one_text", "select ?::int as n", [2])).rows, [
    { n: 2 },
  ]);
});
