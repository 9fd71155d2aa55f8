// The rules that make the schema distributable by tenant with Citus (db/distribution.ts), checked two ways:
// - catalogFindings reads the catalog (information_schema, pg_index, pg_constraint) of a migrated database
//   and reports every table classified nowhere, every tenant table without tenant_id leading its primary
//   key, each unique index and each foreign key (both sides, when it refers to another tenant table), and
//   foreign keys Citus cannot keep (a global table referring to a tenant table, a tenant table to a
//   coordinator-local one);
// - statementFindings reads SQL text (db/*.ts, db/functions/*.sql) and reports every statement that
//   reads or writes a tenant table without naming its tenant: a condition on that table's tenant_id (its
//   alias's, when it has one), or tenant_id among an INSERT's columns.
// Each returns sentences, one per breach; none means the rules hold.
import type { Knex } from "knex";
import {
  COORDINATOR_LOCAL_SCHEMAS,
  DISTRIBUTED_TABLES,
  DISTRIBUTION_COLUMN,
  GLOBAL_TABLES,
} from "../../db/distribution.ts";

const SCHEMA = "integrator";

export async function catalogFindings(db: Knex): Promise<string[]> {
  const findings: string[] = [];
  const tables = (
    await db.raw<{ rows: { schema: string; name: string; tenant_column: boolean }[] }>(
      `select t.table_schema as schema, t.table_name as name,
              exists (select 1 from information_schema.columns c
                       where c.table_schema = t.table_schema and c.table_name = t.table_name
                         and c.column_name = ? and c.is_nullable = 'NO') as tenant_column
         from information_schema.tables t
        where t.table_type = 'BASE TABLE' and t.table_schema not in ('pg_catalog', 'information_schema')
          and t.table_schema not like 'pg\\_%'
        order by 1, 2`,
      [DISTRIBUTION_COLUMN],
    )
  ).rows;
  const known = new Set<string>();
  for (const table of tables) {
    if (table.schema !== SCHEMA) {
      if (!(table.schema in COORDINATOR_LOCAL_SCHEMAS))
        findings.push(
          `${table.schema}.${table.name}: schema ${table.schema} is neither ${SCHEMA} nor a coordinator-local schema`,
        );
      continue;
    }
    known.add(table.name);
    const global = GLOBAL_TABLES[table.name];
    if (global) continue;
    if (!DISTRIBUTED_TABLES.includes(table.name))
      findings.push(
        `${SCHEMA}.${table.name}: not classified (a tenant table in DISTRIBUTED_TABLES or a global one in GLOBAL_TABLES, db/distribution.ts); checked as a tenant table`,
      );
    if (!table.tenant_column) findings.push(`${SCHEMA}.${table.name}: a tenant table without a not-null tenant_id`);
  }
  for (const name of [...DISTRIBUTED_TABLES, ...Object.keys(GLOBAL_TABLES)])
    if (!known.has(name)) findings.push(`${SCHEMA}.${name}: classified in db/distribution.ts but not in the database`);
  const isTenantTable = (schema: string, name: string) =>
    schema === SCHEMA && known.has(name) && GLOBAL_TABLES[name] === undefined;
  const roleOf = (schema: string, name: string): string =>
    schema !== SCHEMA ? "coordinator-local" : (GLOBAL_TABLES[name]?.role ?? "tenant");

  // Primary keys, unique indexes and unique or exclusion constraints (each has its index in pg_index).
  const indexes = (
    await db.raw<{
      rows: {
        table_name: string;
        index_name: string;
        primary: boolean;
        first_column: string | null;
        definition: string;
      }[];
    }>(
      `select t.relname as table_name, i.relname as index_name, x.indisprimary as primary,
              (select a.attname from pg_attribute a where a.attrelid = t.oid and a.attnum = x.indkey[0]) as first_column,
              pg_get_indexdef(x.indexrelid) as definition
         from pg_index x
         join pg_class i on i.oid = x.indexrelid
         join pg_class t on t.oid = x.indrelid
        where t.relnamespace = ?::regnamespace and (x.indisunique or x.indisexclusion)
        order by 1, 2`,
      [SCHEMA],
    )
  ).rows;
  for (const name of known) {
    if (!isTenantTable(SCHEMA, name)) continue;
    if (!indexes.some((index) => index.table_name === name && index.primary))
      findings.push(`${SCHEMA}.${name}: a tenant table without a primary key`);
  }
  for (const index of indexes) {
    if (!isTenantTable(SCHEMA, index.table_name) || index.first_column === DISTRIBUTION_COLUMN) continue;
    const what = index.primary ? "primary key" : "unique index";
    findings.push(
      `${SCHEMA}.${index.table_name}: ${what} ${index.index_name} does not lead with tenant_id (${index.definition})`,
    );
  }

  const foreignKeys = (
    await db.raw<{
      rows: {
        name: string;
        schema: string;
        table_name: string;
        referenced_schema: string;
        referenced: string;
        first_column: string;
        referenced_first_column: string;
        definition: string;
      }[];
    }>(
      `select k.conname as name, t.relnamespace::regnamespace::text as schema, t.relname as table_name,
              r.relnamespace::regnamespace::text as referenced_schema, r.relname as referenced,
              (select a.attname from pg_attribute a where a.attrelid = k.conrelid and a.attnum = k.conkey[1]) as first_column,
              (select a.attname from pg_attribute a where a.attrelid = k.confrelid and a.attnum = k.confkey[1]) as referenced_first_column,
              pg_get_constraintdef(k.oid) as definition
         from pg_constraint k
         join pg_class t on t.oid = k.conrelid
         join pg_class r on r.oid = k.confrelid
        where k.contype = 'f' and (t.relnamespace = ?::regnamespace or r.relnamespace = ?::regnamespace)
        order by 3, 1`,
      [SCHEMA, SCHEMA],
    )
  ).rows;
  for (const key of foreignKeys) {
    const from = roleOf(key.schema, key.table_name);
    const to = roleOf(key.referenced_schema, key.referenced);
    const named = `${key.schema}.${key.table_name}: foreign key ${key.name} (${key.definition})`;
    if (from === "tenant" && to === "tenant") {
      if (key.first_column !== DISTRIBUTION_COLUMN || key.referenced_first_column !== DISTRIBUTION_COLUMN)
        findings.push(`${named} between tenant tables does not lead with tenant_id on both sides`);
      else if (DISTRIBUTED_TABLES.indexOf(key.referenced) > DISTRIBUTED_TABLES.indexOf(key.table_name))
        findings.push(`${named}: ${key.referenced} must come before ${key.table_name} in DISTRIBUTED_TABLES`);
    } else if (from !== "tenant" && to === "tenant") {
      findings.push(`${named}: a ${from} table cannot refer to a tenant table`);
    } else if (from === "tenant" && to === "coordinator-local") {
      findings.push(`${named}: a tenant table cannot refer to a coordinator-local table`);
    } else if (from === "reference" && to === "coordinator-local") {
      findings.push(`${named}: a reference table cannot refer to a coordinator-local table`);
    }
  }
  return findings;
}

/** SQL keywords that may follow a table's name where an alias would be. */
const NOT_ALIASES = new Set(
  "as where set values select on using join left right inner full cross order group limit returning for from into union having window natural default".split(
    " ",
  ),
);

/** The pieces of a source text that are each one statement (or one TypeScript statement around a query), comments removed. */
export function statementsOf(file: string, text: string): string[] {
  if (file.endsWith(".sql")) {
    const body = text
      .split("\n")
      .filter((line) => !line.trim().startsWith("--"))
      .join("\n")
      .replace(/--[^\n]*/g, "");
    return body.split(";");
  }
  const code = text
    .split("\n")
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .join("\n");
  return code.split(/;\s*\n/);
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Every statement of `text` that touches a tenant table without naming the tenant, as "file: table in: statement". */
export function statementFindings(file: string, text: string, tenantTables: readonly string[]): string[] {
  const findings: string[] = [];
  const mention = new RegExp(`\\bintegrator\\.(${tenantTables.map(escaped).join("|")})\\b`, "gi");
  for (const statement of statementsOf(file, text)) {
    for (const match of statement.matchAll(mention)) {
      const table = (match[1] as string).toLowerCase();
      const before = statement.slice(0, match.index);
      const after = statement.slice((match.index ?? 0) + match[0].length);
      let names: boolean;
      if (/\binsert\s+into\s+$/i.test(before)) {
        // An INSERT names the tenant among its columns.
        const columns = /^\s*(?:as\s+\w+\s*)?\(([^)]*)\)/i.exec(after);
        names = columns !== null && new RegExp(`\\b${DISTRIBUTION_COLUMN}\\b`).test(columns[1] as string);
      } else {
        const aliasMatch = /^\s+(?:as\s+)?([a-z_][a-z0-9_]*)/i.exec(after);
        const alias =
          aliasMatch && !NOT_ALIASES.has((aliasMatch[1] as string).toLowerCase())
            ? (aliasMatch[1] as string)
            : undefined;
        // tenant_id (the alias's, when the table has one) in a condition: `tenant_id = ?`, `= d.tenant_id`,
        // knex's `{ tenant_id: ... }` or `"d.tenant_id": ...` (not a type's `tenant_id: string`), and a
        // join's `on("s.tenant_id", "=", "d.tenant_id")`.
        const column = alias
          ? `\\b${escaped(alias)}\\.${DISTRIBUTION_COLUMN}\\b`
          : `(?<![\\w.])${DISTRIBUTION_COLUMN}\\b`;
        names = new RegExp(`${column}"?\\s*(=|:(?!\\s*string\\b)|,\\s*"=")|=(?:",)?\\s*"?${column}`, "i").test(
          statement,
        );
      }
      if (!names)
        findings.push(
          `${file}: ${table} without its tenant in: ${statement.trim().replace(/\s+/g, " ").slice(0, 300)}`,
        );
    }
  }
  return findings;
}
