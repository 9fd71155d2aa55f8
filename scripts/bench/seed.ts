// Seeding for `bench:intake --rows N` (benchmark SQL, not the service's): one tenant's submissions with
// one item each, their audit actions, remembered Idempotency-Key responses, and webhook deliveries of
// one subscription, N of each, written in chunks so memory and WAL stay bounded.
import type { Knex } from "knex";

const CHUNK = 100_000;

export async function seedTenantRows(
  db: Knex,
  tenantId: string,
  subject: string,
  rows: number,
  progress: (done: number) => void = () => undefined,
): Promise<void> {
  const [subscription] = (
    await db.raw<{ rows: { id: string }[] }>(
      `insert into integrator.webhook_subscriptions (tenant_id, url, events, secret_encrypted, created_by, is_active)
     values (?, 'https://seed.example.com/hook', array['intake.submitted'], 'seed', 'bench', false) returning id`,
      [tenantId],
    )
  ).rows;
  for (let start = 0; start < rows; start += CHUNK) {
    const count = Math.min(CHUNK, rows - start);
    await db.raw(
      `with s as (
         insert into integrator.intake_submissions
           (tenant_id, kind, external_reference, item_count, accepted_count, failed_count, status, created_by, created_at)
         select ?, 'single', 'seed-' || g, 1, 1, 0, 'received', ?, now() - (g || ' seconds')::interval
           from generate_series(?::int, ?::int) g
         returning tenant_id, id, created_at
       ), i as (
         insert into integrator.intake_items (tenant_id, submission_id, position, filename, file_size, mime_type, status)
         select tenant_id, id, 0, 'seed.pdf', 1000, 'application/pdf', 'pending' from s
       )
       insert into integrator.audit_actions (tenant_id, action, actor, resource_type, resource_id, details)
       select tenant_id, 'intake.submitted', 'bench', 'intake_submission', id::text, '{}'::jsonb from s`,
      [tenantId, subject, start + 1, start + count],
    );
    await db.raw(
      `insert into integrator.idempotency_keys
         (tenant_id, subject, route, idempotency_key, fingerprint, status_code, response_body, expires_at)
       select ?, ?, 'intake.submit', 'seed-' || g, 'seed', 201, '{}'::jsonb, now() + interval '1 day'
         from generate_series(?::int, ?::int) g`,
      [tenantId, subject, start + 1, start + count],
    );
    await db.raw(
      `with events as (
         insert into integrator.webhook_events (tenant_id, event_type, payload, created_at)
         select ?, 'intake.submitted', '{"event":"intake.submitted"}'::jsonb, now() - (g || ' seconds')::interval
           from generate_series(?::int, ?::int) g
         returning id, created_at
       )
       insert into integrator.webhook_deliveries
         (tenant_id, subscription_id, event_id, event_type, payload, status, attempts, created_at)
       select ?, ?, id, 'intake.submitted', '{"event":"intake.submitted"}'::jsonb, 'delivered', 1, created_at
         from events`,
      [tenantId, start + 1, start + count, tenantId, subscription?.id ?? null],
    );
    progress(start + count);
  }
  await db.raw("analyze");
}
