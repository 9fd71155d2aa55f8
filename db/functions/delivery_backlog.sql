-- integrator.delivery_backlog: a tenant's backlog, its pending deliveries counted up to 1000 (a bounded
-- cost however large the backlog). It is the priority of the tenant's next delivery job (see
-- queue_delivery_jobs.sql), so a tenant with a backlog never pushes another's fresh delivery behind it.
create or replace function integrator.delivery_backlog(tenant_id uuid) returns integer
language sql stable
as $$
  select count(*)::integer from (
    select 1 from integrator.webhook_deliveries d
     where d.tenant_id = delivery_backlog.tenant_id and d.status = 'pending'
     limit 1000
  ) backlog
$$;
