// The integrator schema as the catalog describes it, one line per object or column, sorted: what two
// databases must share to be the same schema (their data aside). Function bodies and view texts come from
// pg_get_functiondef and pg_get_viewdef, so they compare as PostgreSQL stores them.
import type { Knex } from "knex";

const QUERIES: Record<string, string> = {
  relation: `
    select c.relname || ' kind ' || c.relkind::text || ' persistence ' || c.relpersistence::text as line
      from pg_class c
     where c.relnamespace = 'integrator'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')`,
  // Columns in their order (dropped ones, which leave gaps in attnum, aside).
  column: `
    select c.relname || ' #' || row_number() over (partition by c.oid order by a.attnum) || ' ' || a.attname || ' '
           || format_type(a.atttypid, a.atttypmod)
           || case when a.attnotnull then ' not null' else ' null' end
           || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
           || case when a.attidentity <> '' then ' identity ' || a.attidentity::text else '' end
           || case when a.attgenerated <> '' then ' generated ' || a.attgenerated::text else '' end
           || coalesce(' collate ' || nullif(co.collname, 'default'), '') as line
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid
      left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      left join pg_collation co on co.oid = a.attcollation
     where c.relnamespace = 'integrator'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
       and a.attnum > 0 and not a.attisdropped`,
  index: `select indexdef as line from pg_indexes where schemaname = 'integrator'`,
  constraint: `
    select c.relname || ' ' || k.conname || ' ' || k.contype::text || ' ' || pg_get_constraintdef(k.oid)
           || case when k.condeferrable then ' deferrable' else '' end as line
      from pg_constraint k
      join pg_class c on c.oid = k.conrelid
     where k.connamespace = 'integrator'::regnamespace`,
  function: `
    select pg_get_functiondef(p.oid) as line
      from pg_proc p
     where p.pronamespace = 'integrator'::regnamespace and p.prokind in ('f', 'p')`,
  view: `
    select c.relname || ' ' || pg_get_viewdef(c.oid) as line
      from pg_class c
     where c.relnamespace = 'integrator'::regnamespace and c.relkind in ('v', 'm')`,
  trigger: `
    select pg_get_triggerdef(g.oid) || case g.tgenabled when 'O' then '' else ' enabled ' || g.tgenabled::text end as line
      from pg_trigger g
      join pg_class c on c.oid = g.tgrelid
     where c.relnamespace = 'integrator'::regnamespace and not g.tgisinternal`,
  sequence: `
    select sequencename || ' ' || data_type || ' start ' || start_value || ' by ' || increment_by
           || ' from ' || min_value || ' to ' || max_value || ' cycle ' || cycle || ' cache ' || cache_size as line
      from pg_sequences
     where schemaname = 'integrator'`,
  type: `
    select t.typname || ' ' || t.typtype::text || coalesce(' ' || format_type(t.typbasetype, t.typtypmod), '')
           || coalesce(' (' || (select string_agg(e.enumlabel, ', ' order by e.enumsortorder)
                                  from pg_enum e where e.enumtypid = t.oid) || ')', '') as line
      from pg_type t
     where t.typnamespace = 'integrator'::regnamespace and t.typtype in ('e', 'd')`,
};

/** Every line of the schema, each prefixed by its kind (`function`, `index`, ...), sorted. */
export async function schemaOf(db: Knex): Promise<string[]> {
  const lines: string[] = [];
  for (const [kind, query] of Object.entries(QUERIES)) {
    const { rows } = await db.raw<{ rows: { line: string }[] }>(query);
    lines.push(...rows.map((row) => `${kind} ${row.line}`));
  }
  return lines.sort();
}

/** The lines only one of two schemas has. */
export function schemaDifferences(
  left: readonly string[],
  right: readonly string[],
): { onlyLeft: string[]; onlyRight: string[] } {
  return {
    onlyLeft: left.filter((line) => !right.includes(line)),
    onlyRight: right.filter((line) => !left.includes(line)),
  };
}
