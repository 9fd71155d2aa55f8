-- integrator.count_inserted_webhook_deliveries: keeps a tenant's exact delivery count (the sum of its rows
-- in webhook_delivery_counts, read by db/webhooks.ts countDeliveries) as deliveries are inserted, in the
-- inserting statement's own transaction, whoever runs it (emit_event, manual sends). The trigger
-- webhook_deliveries_count_inserted runs it once per statement. A transaction adds to the row of its own
-- backend (one of 16 shards), so concurrent inserts for one tenant do not queue on one row, and rows are
-- taken in tenant order, so two transactions never wait on each other in a cycle.
create or replace function integrator.count_inserted_webhook_deliveries() returns trigger
language plpgsql
as $$
begin
  insert into integrator.webhook_delivery_counts as c (tenant_id, shard, deliveries)
  select tenant_id, pg_backend_pid() % 16, count(*) from inserted group by tenant_id order by tenant_id
  on conflict (tenant_id, shard) do update set deliveries = c.deliveries + excluded.deliveries;
  return null;
end;
$$;
