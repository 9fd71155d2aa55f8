// A database built from scratch and one upgraded from the oldest migration with data in it end with the
// same schema: tables, columns, indexes, constraints, function bodies, views, triggers and sequences.
// The upgraded one is migrated one migration at a time, as releases would have, with rows written at
// each step through the functions of that step's time (so each migration meets the data, and the
// function versions, it met when it was written); both then go through migrate(), as every start does,
// which applies db/functions/. A migration or a function file that left the two apart fails here.
import t from "tap";
import type { Knex } from "knex";
import { createDatabase, migrate } from "../../db/database.ts";
import { FUNCTION_FILES } from "../../db/functions/index.ts";
import { insertSubmissionOnce } from "../../db/intake.ts";
import { migrationSource } from "../../db/migrations/index.ts";
import { migrateWorkerSchema } from "../../worker/schema.ts";
import { createEmptyDatabase } from "../helpers/database.ts";
import { schemaDifferences, schemaOf } from "../helpers/schema.ts";

const config = { migrationSource, schemaName: "integrator", tableName: "knex_migrations" };

const acme = crypto.randomUUID();
const beta = crypto.randomUUID();
const firstSubmission = crypto.randomUUID();

const intakeEventData = (submissionId: string) =>
  JSON.stringify({
    submission_id: submissionId,
    external_reference: "ref",
    module: null,
    tier: null,
    status: "received",
    item_count: 1,
    accepted_count: 1,
    failed_count: 0,
  });

const item = (position: number) => ({
  id: crypto.randomUUID(),
  position,
  filename: `scan-${position}.pdf`,
  file_size: 2048,
  mime_type: "application/pdf",
  item_metadata: { pages: 2 },
  status: "uploaded",
  error_message: null,
});

/** A pending delivery of the tenant with no attempt recorded yet. */
async function pendingDelivery(db: Knex, tenantId: string): Promise<string> {
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    `select id from integrator.webhook_deliveries where tenant_id = ? and status = 'pending' and attempts = 0
      order by created_at, id limit 1`,
    [tenantId],
  );
  const id = rows[0]?.id;
  if (!id) throw new Error("no pending delivery left");
  return id;
}

/** Each statement in turn, with its bindings. */
async function run(db: Knex, statements: [sql: string, bindings?: readonly unknown[]][]): Promise<void> {
  for (const [sql, bindings = []] of statements) await db.raw(sql, [...bindings] as Knex.RawBinding[]);
}

/** What is written right after each migration, with what that migration's schema and functions allow. */
const dataAfter: Record<string, (db: Knex) => Promise<unknown>> = {
  "0001_foundation": (db) =>
    run(db, [
      ["insert into integrator.tenants (id, name) values (?, 'Acme Health'), (?, 'Beta Insurance')", [acme, beta]],
      [
        `insert into integrator.users (tenant_id, username, password_hash, roles)
         values (?, 'ada', 'scrypt$hash', '{intake:write,webhooks:manage}'), (?, 'mallory', 'scrypt$hash', '{}')`,
        [acme, acme],
      ],
      [
        "insert into integrator.api_clients (tenant_id, client_id, secret_hash, roles) values (?, 'acme-ci', 'hash', '{intake:write}')",
        [acme],
      ],
      [
        `insert into integrator.signing_keys (kid, algorithm, public_jwk, private_jwk_encrypted)
         values ('key-1', 'ES256', '{"kty": "EC", "crv": "P-256"}', 'sealed')`,
      ],
      ["insert into integrator.worker_heartbeats (worker_id) values ('worker-1')"],
    ]),
  "0002_intake": (db) =>
    run(db, [
      [
        `insert into integrator.intake_submissions
           (tenant_id, id, external_reference, module, tier, kind, item_count, accepted_count, failed_count, status, created_by, request_id)
         values (?, ?, 'ref-1', 'claims', 'gold', 'batch', 2, 1, 1, 'completed_with_errors', 'ada', 'req-1')`,
        [acme, firstSubmission],
      ],
      [
        `insert into integrator.intake_items
           (tenant_id, submission_id, position, filename, file_size, mime_type, item_metadata, status, error_message)
         values (?, ?, 0, 'a.pdf', 10, 'application/pdf', '{}', 'uploaded', null),
                (?, ?, 1, 'b.exe', 5, 'application/octet-stream', null, 'rejected', 'type not allowed')`,
        [acme, firstSubmission, acme, firstSubmission],
      ],
      [
        `insert into integrator.idempotency_keys
           (tenant_id, subject, route, idempotency_key, fingerprint, status_code, response_body, expires_at)
         values (?, 'user:ada', 'submitIntake', 'key-1', 'fp-1', 201, '{"id": "first"}', now() + interval '1 day')`,
        [acme],
      ],
      [
        `insert into integrator.audit_actions (tenant_id, action, actor, resource_type, resource_id, request_id)
         values (?, 'intake.batch_submitted', 'ada', 'intake_submission', ?, 'req-1')`,
        [acme, firstSubmission],
      ],
    ]),
  "0003_webhooks": async (db) => {
    await db.raw(
      `insert into integrator.webhook_subscriptions (tenant_id, url, events, secret_encrypted, created_by, created_at)
       values (?, 'https://hooks.example.com/a', '{*}', 'sealed', 'ada', '2026-01-01'),
              (?, 'https://hooks.example.com/a', '{intake.submitted}', 'sealed', 'ada', '2026-02-01'),
              (?, 'https://hooks.example.com/b', '{scorecard.created,intake.submitted}', 'sealed', 'ada', '2026-03-01'),
              (?, 'https://hooks.example.com/c', '{*}', 'sealed', 'bob', '2026-01-01')`,
      [acme, acme, acme, beta],
    );
    await db.raw("select integrator.emit_event(?::uuid, 'scorecard.created', ?::jsonb)", [
      acme,
      JSON.stringify({ scorecard_id: crypto.randomUUID() }),
    ]);
    await db.raw(
      `update integrator.webhook_deliveries set status = 'delivered', attempts = 1, last_attempt_at = now(), response_code = 200
        where id = ?`,
      [await pendingDelivery(db, acme)],
    );
  },
  "0004_partners": (db) =>
    run(db, [
      [
        `insert into integrator.partners (partner_key, name, launch_url, context_keys, callback_secret_encrypted)
         values ('acme-claims', 'Acme Claims', 'https://partner.example.com/launch', '{member_id}', 'sealed')`,
      ],
      ["insert into integrator.partner_entitlements (tenant_id, partner_key) values (?, 'acme-claims')", [acme]],
      [
        `insert into integrator.routing_decisions
           (tenant_id, kind, partner_key, result, reason, correlation_id, return_url, expires_at, created_by)
         values (?, 'launch', 'acme-claims', 'routed', null, 'corr-1', 'https://app.example.com/back', now() + interval '5 minutes', 'ada'),
                (?, 'switch', 'acme-claims', 'denied', 'NOT_ENTITLED', 'corr-2', null, null, 'bob')`,
        [acme, beta],
      ],
      [
        `insert into integrator.partner_callbacks (tenant_id, partner_key, event_key, event, payload)
         values (?, 'acme-claims', 'evt-1', 'claim.updated', '{"event_id": "evt-1"}')`,
        [acme],
      ],
    ]),
  "0005_rate_limits": (db) =>
    db.raw(
      "insert into integrator.rate_limits (key, points, expire) values ('ip:203.0.113.7', 3, (extract(epoch from now()) * 1000)::bigint + 60000)",
    ),
  "0006_webhook_engine": async (db) => {
    await db.raw("update integrator.worker_heartbeats set runner_ids = '{pool-1}'");
    await db.raw("select integrator.emit_event(?::uuid, 'intake.submitted', ?::jsonb)", [
      beta,
      intakeEventData(crypto.randomUUID()),
    ]);
  },
  "0007_webhook_operations": (db) =>
    run(db, [
      [
        `insert into integrator.webhook_delivery_attempts
           (tenant_id, delivery_id, number, attempted_at, duration_ms, outcome, response_code, error_class)
         select tenant_id, id, 1, last_attempt_at, 120, 'delivered', 200, null
           from integrator.webhook_deliveries where tenant_id = ? and status = 'delivered'`,
        [acme],
      ],
      [
        `insert into integrator.webhook_deliveries (tenant_id, subscription_id, event_type, payload, origin, redelivery_of)
         select tenant_id, subscription_id, event_type, payload, 'redelivery', id
           from integrator.webhook_deliveries where tenant_id = ? and status = 'delivered'`,
        [acme],
      ],
      [
        `update integrator.webhook_subscriptions
            set disabled_at = now(), disabled_reason = '5 deliveries in a row failed', consecutive_failed_deliveries = 5,
                failing_since = now() - interval '1 day'
          where tenant_id = ? and url = 'https://hooks.example.com/b'`,
        [acme],
      ],
      [
        `update integrator.webhook_subscriptions
            set previous_secret_encrypted = 'sealed-before', previous_secret_expires_at = now() + interval '1 day'
          where tenant_id = ? and url = 'https://hooks.example.com/a' and is_active`,
        [acme],
      ],
    ]),
  "0008_account_protection": (db) =>
    run(db, [
      ["update integrator.users set disabled_at = now() where username = 'mallory'"],
      [
        `insert into integrator.login_failures (username_key, failures, last_failure_at, locked_until)
         values ('sha256:mallory', 5, now(), now() + interval '15 minutes')`,
      ],
    ]),
  "0009_idempotency_exact_bytes": (db) =>
    db.raw(
      `insert into integrator.idempotency_keys
         (tenant_id, subject, route, idempotency_key, fingerprint, status_code, response_body, expires_at)
       values (?, 'user:ada', 'submitIntake', 'key-2', 'fp-2', 201, '{"id":"second",  "n":1.0}', now() + interval '1 day')`,
      [acme],
    ),
  "0010_write_path": (db) =>
    db.raw(
      `select * from integrator.submit_intake(?, ?, 'single', 'ref-2', null, null, 'received', 1, 0, 'ada', 'req-2',
         ?::jsonb, 'intake.submitted', 'ada', '{}'::jsonb)`,
      [acme, crypto.randomUUID(), JSON.stringify([item(0)])],
    ),
  "0014_intake_with_key": (db) =>
    db.raw(
      `select * from integrator.submit_intake_once(?, 'user:ada', 'submitIntake', 'key-3', 'lock-3', 'fp-3', 24, '{"id":"x","created_at":',
         ?, ?, 'batch', 'ref-3', 'claims', null, 'received', 2, 0, 'ada', 'req-3', ?::jsonb, 'intake.batch_submitted', 'ada', '{}'::jsonb)`,
      [acme, acme, crypto.randomUUID(), JSON.stringify([item(0), item(1)])],
    ),
  "0015_webhook_manual_disable": (db) =>
    db.raw(
      "update integrator.webhook_subscriptions set disabled_at = now(), disabled_by = 'manual', disabled_reason = null where tenant_id = ?",
      [beta],
    ),
  "0016_emit_event_one_add_jobs": async (db) => {
    // One delivery (add_job), then two (add_jobs).
    await db.raw("select integrator.emit_event(?::uuid, 'document.uploaded', ?::jsonb)", [
      acme,
      JSON.stringify({ document_id: crypto.randomUUID(), status: "uploaded" }),
    ]);
    await db.raw("select integrator.emit_event(?::uuid, 'scorecard.created', ?::jsonb)", [
      acme,
      JSON.stringify({ scorecard_id: crypto.randomUUID() }),
    ]);
  },
  "0017_routing_decision_in_one_statement": (db) =>
    db.raw(
      `select * from integrator.record_routing_decision_once(?, 'user:ada', 'switchPartner', 'key-4', 'lock-4', 'fp-4', 24,
         '{"result":"routed"}', ?, ?, 'switch', 'acme-claims', 'routed', null, 'corr-3', null, now() + interval '5 minutes',
         'ada', 'req-4', 'partner.switched', '{}'::jsonb)`,
      [acme, acme, crypto.randomUUID()],
    ),
  "0018_delivery_attempt_functions": async (db) =>
    db.raw(
      `select integrator.record_delivery_attempt(?, ?, 0, 'pending', now(), 80, 503, 'HTTP 503', 'http_status',
         now() + interval '1 minute', 10, 3)`,
      [acme, await pendingDelivery(db, acme)],
    ),
  "0021_delivery_jobs_carry_their_attempt": async (db) =>
    db.raw(
      `select integrator.record_delivery_attempt(?, ?, 0, 'pending', now(), 3000, null, 'timed out', 'timeout',
         now() + interval '1 minute', 10, 3)`,
      [acme, await pendingDelivery(db, acme)],
    ),
};

t.test(
  "a database built from scratch and one upgraded from the oldest migration with data in it have the same schema",
  async (t) => {
    const freshUrl = await createEmptyDatabase(t);
    const fresh = createDatabase(freshUrl, 2, "integrator-test");
    t.teardown(() => fresh.destroy());
    await migrate(fresh);
    await migrateWorkerSchema(freshUrl);

    const upgradedUrl = await createEmptyDatabase(t);
    const upgraded = createDatabase(upgradedUrl, 2, "integrator-test");
    t.teardown(() => upgraded.destroy());
    await upgraded.raw("create schema integrator");
    const names = (await migrationSource.getMigrations([])).map((entry) => migrationSource.getMigrationName(entry));
    const unknown = Object.keys(dataAfter).filter((name) => !names.includes(name));
    t.same(unknown, [], "every step that writes data names a migration");
    for (const [index, name] of names.entries()) {
      await upgraded.migrate.up(config);
      // A start of that release installed graphile-worker's schema after its migrations.
      if (index === 0) await migrateWorkerSchema(upgradedUrl);
      await dataAfter[name]?.(upgraded);
    }
    await migrate(upgraded);
    await migrateWorkerSchema(upgradedUrl);

    const freshSchema = await schemaOf(fresh);
    const upgradedSchema = await schemaOf(upgraded);
    for (const kind of ["relation", "column", "index", "constraint", "function", "trigger", "sequence"])
      t.ok(
        freshSchema.some((line) => line.startsWith(`${kind} `)),
        `the comparison reads ${kind}s (${freshSchema.filter((line) => line.startsWith(`${kind} `)).length})`,
      );
    t.same(
      schemaDifferences(freshSchema, upgradedSchema),
      { onlyLeft: [], onlyRight: [] },
      "nothing only in the fresh database (left) or only in the upgraded one (right)",
    );

    const { rows: functions } = await fresh.raw<{ rows: { name: string }[] }>(
      "select proname as name from pg_proc where pronamespace = 'integrator'::regnamespace order by proname",
    );
    t.same(
      functions.map((row) => row.name),
      [...FUNCTION_FILES].sort(),
      "every function of the schema has its file in db/functions/, and each exists once (no older overload left)",
    );

    // The data came through: every tenant's delivery count is exact, every queued delivery job names its
    // attempt, and a keyed intake write through the service's write path (db/intake.ts) fans out.
    const { rows: counts } = await upgraded.raw<{ rows: { tenant_id: string; counted: number; actual: number }[] }>(
      `select d.tenant_id, (select coalesce(sum(c.deliveries), 0)::integer from integrator.webhook_delivery_counts c
                             where c.tenant_id = d.tenant_id) as counted, count(*)::integer as actual
         from integrator.webhook_deliveries d group by d.tenant_id order by d.tenant_id`,
    );
    t.equal(counts.length, 2, "both tenants have deliveries");
    for (const row of counts) t.equal(row.counted, row.actual, "a tenant's delivery count is exact");
    const { rows: events } = await upgraded.raw<{ rows: { deliveries: number; eventless: number; split: number }[] }>(
      `select count(*)::integer as deliveries,
              count(*) filter (where not exists (select 1 from integrator.webhook_events e
                                                  where e.tenant_id = d.tenant_id and e.id = d.event_id
                                                    and e.payload = d.payload)
                                  or d.payload->>'id' <> 'evt_' || d.event_id)::integer as eventless,
              count(*) filter (where exists (select 1 from integrator.webhook_deliveries o
                                              where o.tenant_id = d.tenant_id and o.id = d.redelivery_of
                                                and o.event_id <> d.event_id))::integer as split
         from integrator.webhook_deliveries d`,
    );
    t.ok((events[0]?.deliveries ?? 0) > 0);
    t.equal(
      events[0]?.eventless,
      0,
      "every delivery made before events had ids has its event, whose id its envelope carries",
    );
    t.equal(events[0]?.split, 0, "a resend made before then belongs to the event of the delivery it resent");
    const { rows: due } = await upgraded.raw<{ rows: { pending: number; undue: number; retried: number }[] }>(
      `select count(*)::integer as pending,
              count(*) filter (where next_attempt_at is null)::integer as undue,
              count(*) filter (where attempts > 0 and next_attempt_at > last_attempt_at)::integer as retried
         from integrator.webhook_deliveries where status = 'pending'`,
    );
    t.ok((due[0]?.pending ?? 0) > 0);
    t.equal(
      due[0]?.undue,
      0,
      "every delivery pending before next_attempt_at existed says when its next attempt is due",
    );
    t.equal(due[0]?.retried, 2, "the two waiting for a retry: when their retry's job runs, after their last attempt");
    const { rows: unexplained } = await upgraded.raw<{ rows: { failed: number; unexplained: number }[] }>(
      `select count(*)::integer as failed, count(*) filter (where error_message is null)::integer as unexplained
         from integrator.webhook_delivery_attempts where outcome = 'failed'`,
    );
    t.ok((unexplained[0]?.failed ?? 0) > 0);
    t.equal(unexplained[0]?.unexplained, 0, "every failed attempt recorded before has the sentence of its class");
    const { rows: unnamed } = await upgraded.raw<{ rows: { n: number }[] }>(
      `select count(*)::integer as n from graphile_worker._private_jobs j
         join graphile_worker._private_tasks k on k.id = j.task_id
        where k.identifier = 'deliver_webhook' and j.payload->'attempts' is null`,
    );
    t.equal(unnamed[0]?.n, 0, "every deliver_webhook job queued before jobs named their attempt names it now");
    const written = await insertSubmissionOnce(
      upgraded,
      {
        tenant_id: acme,
        subject: "user:ada",
        route: "submitIntake",
        idempotency_key: "key-5",
        startedAt: Date.now(),
        lockText: "lock-5",
        fingerprint: "fp-5",
        ttlHours: 24,
      },
      {
        tenantId: acme,
        kind: "single",
        externalReference: "ref-5",
        module: null,
        tier: null,
        status: "received",
        acceptedCount: 1,
        failedCount: 0,
        createdBy: "ada",
        requestId: "req-5",
      },
      [
        {
          filename: "scan-0.pdf",
          file_size: 2048,
          mime_type: "application/pdf",
          item_metadata: null,
          status: "uploaded",
          error_message: null,
        },
      ],
      { action: "intake.submitted", actor: "ada", requestId: "req-5", details: {} },
    );
    t.equal(written.outcome, "written");
    const submission = (JSON.parse(written.response_body ?? "{}") as { id: string }).id;
    const { rows: jobs } = await upgraded.raw<{ rows: { task: string; deliveries: number }[] }>(
      `select k.identifier as task, json_array_length(j.payload->'delivery_ids') as deliveries
         from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
        where j.payload->'delivery_ids' is not null
          and (j.payload->'delivery_ids'->>0)::uuid in (select id from integrator.webhook_deliveries
                                                          where payload->'data'->>'submission_id' = ?)`,
      [submission],
    );
    t.same(
      jobs,
      [{ task: "deliver_webhooks", deliveries: 2 }],
      "one job for the event's deliveries to the two active subscriptions that take it",
    );
  },
);

t.test("the comparison sees a function body or a column default that differs", async (t) => {
  const url = await createEmptyDatabase(t);
  const db = createDatabase(url, 2, "integrator-test");
  t.teardown(() => db.destroy());
  await migrate(db);
  const before = await schemaOf(db);

  const { rows } = await db.raw<{ rows: { definition: string }[] }>(
    "select pg_get_functiondef('integrator.delivery_backlog(uuid)'::regprocedure) as definition",
  );
  const definition = rows[0]?.definition ?? "";
  await db.raw(definition.replace("limit 1000", "limit 1001"));
  await db.raw("alter table integrator.partners alter column status set default 'paused'");
  const { onlyLeft, onlyRight } = schemaDifferences(before, await schemaOf(db));
  t.equal(onlyLeft.length, 2);
  t.match(onlyLeft[0] ?? "", /^column partners #\d+ status text not null default 'active'/);
  t.match(onlyLeft[1] ?? "", /^function CREATE OR REPLACE FUNCTION integrator\.delivery_backlog\(/);
  t.match(onlyRight[1] ?? "", /limit 1001/);
});
