-- integrator.count_deleted_webhook_deliveries: the other half of count_inserted_webhook_deliveries.sql,
-- lowering a tenant's delivery count as deliveries are deleted (the retention purge). The trigger
-- webhook_deliveries_count_deleted runs it once per statement.
create or replace function integrator.count_deleted_webhook_deliveries() returns trigger
language plpgsql
as $$
begin
  insert into integrator.webhook_delivery_counts as c (tenant_id, shard, deliveries)
  select tenant_id, pg_backend_pid() % 16, -count(*) from deleted group by tenant_id order by tenant_id
  on conflict (tenant_id, shard) do update set deliveries = c.deliveries + excluded.deliveries;
  return null;
end;
$$;
