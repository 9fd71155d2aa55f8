// listIntakeSubmissions: a tenant's submissions newest first, alone or by status or external reference.
// Each index leads with tenant_id and ends with the page order (created_at desc, id desc), so a page is
// one range scan whatever the tenant's number of submissions.
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create index intake_submissions_newest
      on integrator.intake_submissions (tenant_id, created_at desc, id desc);
    create index intake_submissions_by_status
      on integrator.intake_submissions (tenant_id, status, created_at desc, id desc);
    create index intake_submissions_by_external_reference
      on integrator.intake_submissions (tenant_id, external_reference, created_at desc, id desc)
      where external_reference is not null;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index if exists integrator.intake_submissions_by_external_reference;
    drop index if exists integrator.intake_submissions_by_status;
    drop index if exists integrator.intake_submissions_newest;
  `);
}
