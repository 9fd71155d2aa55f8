// Named prepared statements (db/prepared.ts): the hot statements are prepared once per connection and
// reused, and a name never stands for two texts.
import t from "tap";
import type { Knex } from "knex";
import { createDatabase } from "../../db/database.ts";
import { emitEvent } from "../../db/events.ts";
import { insertSubmissionWithEvent } from "../../db/intake.ts";
import { runPrepared } from "../../db/prepared.ts";
import { createTenant } from "../../db/principals.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { promotedShare } from "../helpers/promotion.ts";
import { serviceModule } from "../helpers/repository-copy.ts";

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
    "select name, statement, generic_plans, custom_plans from pg_prepared_statements where name in ('record_submission', 'emit_event') order by name",
  );
  t.same(
    rows.map((row) => row.name),
    ["emit_event", "record_submission"],
    "both are prepared on the connection",
  );
  const submitStatement = rows.find((row) => row.name === "record_submission");
  t.match(submitStatement?.statement, /integrator\.record_submission\(\$1, /, "sent with its placeholders numbered");
  t.equal(
    Number(submitStatement?.generic_plans) + Number(submitStatement?.custom_plans),
    2,
    "prepared once and executed twice",
  );
});

t.test("a name given a second text is refused before anything is sent", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 1, "integrator-test");
  t.teardown(() => db.destroy());
  t.same((await runPrepared<{ n: number }>(db, "test_one_text", "select ?::int as n", [1])).rows, [{ n: 1 }]);
  t.throws(
    () => runPrepared(db, "test_one_text", "select ?::int + 1 as n", [1]),
    /test_one_text was given a second text/,
  );
  t.same((await runPrepared<{ n: number }>(db, "test_one_text", "select ?::int as n", [2])).rows, [{ n: 2 }]);
});

t.test("a binding count that does not match the text is refused before anything is sent", async (t) => {
  const db = createDatabase(await createTestDatabase(t), 1, "integrator-test");
  t.teardown(() => db.destroy());
  t.throws(() => runPrepared(db, "test_two", "select ?::int + ?::int as n", [1]), /takes 2 defined bindings/);
  t.throws(
    () => runPrepared(db, "test_two", "select ?::int + ?::int as n", [1, undefined]),
    /takes 2 defined bindings/,
  );
  t.same((await runPrepared<{ n: number }>(db, "test_two", "select ?::int + ?::int as n", [1, 2])).rows, [{ n: 3 }]);
});

t.test(
  "inside a transaction it runs on the transaction's connection; a failure gives the connection back",
  async (t) => {
    // One connection: a statement that kept it would leave the next one waiting for the pool.
    const db = createDatabase(await createTestDatabase(t), 1, "integrator-test");
    t.teardown(() => db.destroy());
    await db.transaction(async (trx) => {
      const viaKnex = await trx.raw<{ rows: { xid: string }[] }>("select txid_current()::text as xid");
      const prepared = await runPrepared<{ xid: string }>(trx, "test_xid", "select txid_current()::text as xid", []);
      t.equal(prepared.rows[0]?.xid, viaKnex.rows[0]?.xid, "the same transaction");
    });
    await t.rejects(runPrepared(db, "test_fails", "select 1 / ?::int as n", [0]), { code: "22012" });
    t.same((await runPrepared<{ n: number }>(db, "test_fails", "select 1 / ?::int as n", [1])).rows, [{ n: 1 }]);
  },
);

t.test("a statement whose result columns a migration changed is prepared again under a fresh name", async (t) => {
  const url = await createTestDatabase(t);
  // One connection, which keeps the statement it prepared; the migration comes from another process.
  const db = createDatabase(url, 1, "integrator-test");
  const migrator = createDatabase(url, 1, "integrator-test");
  t.teardown(async () => {
    await db.destroy();
    await migrator.destroy();
  });
  const shape = (columns: string, values: string) =>
    migrator.raw(
      `drop function if exists public.test_shape(); create function public.test_shape() returns table (${columns}) language sql as 'select ${values}'`,
    );
  const call = (on: Knex | Knex.Transaction = db) =>
    runPrepared<Record<string, number>>(on, "test_shape", "select * from public.test_shape()", []);
  await shape("a int", "1");
  t.same((await call()).rows, [{ a: 1 }]);

  await shape("a int, b int", "1, 2");
  t.same((await call()).rows, [{ a: 1, b: 2 }], "retried under a fresh name on the same connection");
  t.same((await call()).rows, [{ a: 1, b: 2 }], "and run under it from then on");

  await shape("a int, b int, c int", "1, 2, 3");
  await t.rejects(
    db.transaction((trx) => call(trx)),
    { code: "0A000" },
    "inside a transaction the failure has aborted it: the caller's error",
  );
  t.same((await call()).rows, [{ a: 1, b: 2, c: 3 }], "the next call, outside it, runs under the fresh name");
});

// With --max-opt=2 V8 optimises no further than Maglev, as a process runs its first thousands of requests,
// when pg's promise path kept a statement's values past the request.
t.test("a statement's values do not outlive its request, before V8 optimises the code too", async (t) => {
  const url = await createTestDatabase(t);
  const run = (query: string) =>
    promotedShare({
      nodeArguments: ["--max-opt=2"],
      env: { DATABASE_URL: url },
      handler: `
        const { createDatabase } = await import(${serviceModule("db/database.ts")});
        const { runPrepared } = await import(${serviceModule("db/prepared.ts")});
        const db = createDatabase(process.env.DATABASE_URL, 4, "integrator-test");
        ${query}
        // What a batch of 100 sends: its items as one JSON text.
        const handle = (req, res) => {
          const items = Array.from({ length: 100 }, (_, i) => ({ position: i, reference: "item " + i + " " + Math.random() }));
          query(JSON.stringify(items)).then(
            (result) => res.end(String(result.rows[0].n)),
            (error) => { res.statusCode = 500; res.end(String(error)); },
          );
        };`,
    });
  const withPgsPromise = await run(`
    const query = async (json) => {
      const connection = await db.client.acquireConnection();
      try {
        return await connection.query({ name: "measured", text: "select length($1::text) as n", values: [json] });
      } finally {
        await db.client.releaseConnection(connection);
      }
    };`);
  t.ok(
    withPgsPromise > 0.06,
    `pg's promise: ${(100 * withPgsPromise).toFixed(1)} % of the bytes promoted (so this can fail)`,
  );
  const withRunPrepared = await run(`
    const query = (json) => runPrepared(db, "measured", "select length(?::text) as n", [json]);`);
  t.ok(withRunPrepared < 0.03, `runPrepared: ${(100 * withRunPrepared).toFixed(1)} % promoted`);
});
