// PostgreSQL's CPU per intake write (integrator.record_submission, one item, as a submit without a key
// sends it), from N connections calling it in a loop for one tenant: the schema as migrated against the
// same schema with a SQL file applied (another text of the function, an index or a constraint dropped, as
// an experiment), two databases in one throwaway PostgreSQL, segments alternating. PostgreSQL's CPU is
// its processes' (scripts/bench/cpu.ts); the ratio of a round is the variant's CPU per call ÷ the
// migrated schema's in the segment before it. Nothing of Node's pipeline is in these figures.
// `node scripts/bench/write-variants.ts --variant FILE [--connections 8] [--seconds 3] [--rounds 6]`
import fs from "node:fs";
import { parseArgs } from "node:util";
import pg from "pg";
import { createDatabase, createDatabaseOnServer } from "../../db/database.ts";
import { uuidV7 } from "../../db/ids.ts";
import { migrateAll } from "../../app/services.ts";
import { throwawayPostgres, withDatabase } from "../throwaway-postgres.ts";
import { cpuMeter } from "./cpu.ts";
import { fixed, machine, median, revision, uptime } from "./common.ts";

const { values } = parseArgs({
  options: {
    variant: { type: "string" },
    connections: { type: "string", default: "8" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "6" },
  },
});
if (!values.variant)
  throw new Error("usage: write-variants.ts --variant FILE [--connections N] [--seconds S] [--rounds N]");
const variant = fs.readFileSync(values.variant, "utf8");
const connections = Number(values.connections);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);

const WRITE =
  "select integrator.record_submission($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::timestamptz, $13::jsonb, $14, $15, $16::jsonb)";

interface Schema {
  url: string;
  tenantId: string;
}

const before = uptime();
const postgres = await throwawayPostgres("integrator-write-variants");

async function schema(name: string, ddl?: string): Promise<Schema> {
  await createDatabaseOnServer(postgres.adminUrl, name);
  const url = withDatabase(postgres.adminUrl, name);
  const db = createDatabase(url, 2);
  await migrateAll(db, url);
  await db.destroy();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    if (ddl) await client.query(ddl);
    const { rows } = await client.query<{ id: string }>(
      "insert into integrator.tenants (name) values ('write-variants') returning id",
    );
    return { url, tenantId: rows[0]?.id ?? "" };
  } finally {
    await client.end();
  }
}

/** One item's write, as db/intake.ts sends it for a submit without a key. */
function writeValues(tenantId: string): unknown[] {
  const now = new Date();
  const id = uuidV7(now.getTime());
  const items = [
    {
      filename: "contract.pdf",
      file_size: 48213,
      mime_type: "application/pdf",
      item_metadata: { matter: "A-1" },
      status: "pending",
      error_message: null,
      position: 0,
      id: uuidV7(now.getTime()),
    },
  ];
  const details = { item_count: 1, accepted_count: 1, failed_count: 0, actor_tenant_id: tenantId };
  return [
    tenantId,
    id,
    "single",
    "bench",
    null,
    null,
    "received",
    1,
    0,
    "bench",
    `bench-${id}`,
    now,
    JSON.stringify(items),
    "intake.submitted",
    "bench",
    JSON.stringify(details),
  ];
}

/** Calls per second and PostgreSQL's CPU ms per call over one segment. */
async function segment(target: Schema): Promise<{ rate: number; postgresMs: number }> {
  const pool = new pg.Pool({ connectionString: target.url, max: connections });
  try {
    const opened = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
    for (const client of opened) client.release();
    const cpuPer = cpuMeter(postgres.databaseDir);
    let calls = 0;
    const end = Date.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (Date.now() < end) {
          await pool.query({ name: "record_submission", text: WRITE, values: writeValues(target.tenantId) });
          calls++;
        }
      }),
    );
    return { rate: calls / seconds, postgresMs: cpuPer(calls).postgresMs };
  } finally {
    await pool.end();
  }
}

try {
  const migrated = await schema("integrator_write_migrated");
  const changed = await schema("integrator_write_variant", variant);
  // Warm-up, not counted: plans, caches and the pools' first connections.
  await segment(migrated);
  await segment(changed);
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const a = await segment(migrated);
    const b = await segment(changed);
    ratios.push(b.postgresMs / a.postgresMs);
    process.stdout.write(
      `round ${round}: migrated ${fixed(a.rate)}/s, PostgreSQL ${fixed(a.postgresMs, 3)} ms per call; variant ${fixed(b.rate)}/s, ${fixed(b.postgresMs, 3)} ms; ratio ${fixed(b.postgresMs / a.postgresMs, 2)}\n`,
    );
  }
  process.stdout.write(
    [
      `Variant ${values.variant}: PostgreSQL CPU per call, variant ÷ migrated, median of ${rounds} rounds: ${fixed(median(ratios), 2)} (rounds ${ratios.map((r) => fixed(r, 2)).join(", ")}); ${connections} connections, ${seconds} s segments.`,
      `Run: ${revision()}. Machine: ${machine()}.`,
      `Load before: ${before}`,
      `Load after:  ${uptime()}`,
      "",
    ].join("\n"),
  );
} finally {
  await postgres.stop();
}
