// Issue 13 (performance): an intake item is indexed twice by its id, where once does the job. Since 0002
// it had the primary key (tenant_id, id) and the unique index intake_items_id on (id) alone (operator
// commands address an item by id, not knowing its tenant); an id unique on its own is unique with its
// tenant, so the first index checked and stored nothing the second did not. Every item paid both, three
// unique indexes in all (the third is its position in its submission). The primary key is now (id), on
// the index that was intake_items_id; a tenant's look-up by (tenant_id, id) uses it as well.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.intake_items drop constraint intake_items_pkey;
    alter table integrator.intake_items add constraint intake_items_pkey primary key using index intake_items_id;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table integrator.intake_items drop constraint intake_items_pkey;
    create unique index intake_items_id on integrator.intake_items (id);
    alter table integrator.intake_items add constraint intake_items_pkey primary key (tenant_id, id);
  `);
}
