// Issue 29 (ready for Citus): an intake item is keyed by (tenant_id, id) again, as every tenant table is,
// so the schema can be distributed by tenant_id. 0020 had made its primary key (id) alone, on the index
// that was intake_items_id, because operator commands addressed an item by id without its tenant and a
// second unique index led by tenant_id cost every insert and checked nothing more. Operator commands now
// take the item's tenant (item:link and item:status --tenant), so the one id index is the tenant-led
// primary key: an item is still indexed by its id once (two unique indexes in all, as after 0020), and a
// tenant's look-up by (tenant_id, id) is the primary key's. An id stays unique within its tenant; ids are
// UUIDv7 made by db/ids.ts, and nothing relies on an id being unique across tenants any more.
//
// Rebuilding the primary key holds an ACCESS EXCLUSIVE lock on intake_items while the new index is built
// (reads and writes of items wait). On a large table, build the index first without blocking writes:
//   create unique index concurrently intake_items_tenant_id_id on integrator.intake_items (tenant_id, id);
// and this migration takes it over (primary key using index: the swap itself is instant). An invalid
// leftover of a concurrent build that failed is dropped and the index built here.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    do $$
    begin
      alter table integrator.intake_items drop constraint intake_items_pkey;
      if exists (
        select 1 from pg_index i join pg_class c on c.oid = i.indexrelid
         where i.indrelid = 'integrator.intake_items'::regclass and c.relname = 'intake_items_tenant_id_id'
           and i.indisvalid and i.indisunique and i.indpred is null and i.indexprs is null
           and pg_get_indexdef(i.indexrelid) like '% USING btree (tenant_id, id)'
      ) then
        alter table integrator.intake_items add constraint intake_items_pkey primary key using index intake_items_tenant_id_id;
      else
        drop index if exists integrator.intake_items_tenant_id_id;
        alter table integrator.intake_items add constraint intake_items_pkey primary key (tenant_id, id);
      end if;
    end
    $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  // As 0020 left it: the primary key (id) alone.
  await knex.raw(`
    alter table integrator.intake_items drop constraint intake_items_pkey;
    alter table integrator.intake_items add constraint intake_items_pkey primary key (id);
  `);
}
