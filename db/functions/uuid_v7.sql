-- integrator.uuid_v7: a time-ordered UUID (version 7), the default id of every table (db/ids.ts makes
-- one ahead of a write). Ids made close in time sit close in a b-tree, so inserts stay local. Works on
-- PostgreSQL 14+, which has no uuidv7() of its own before 18.
create or replace function integrator.uuid_v7() returns uuid
language sql volatile
as $$
  select encode(
    set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
      placing substring(int8send((extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
      from 1 for 6), 52, 1), 53, 1), 'hex')::uuid
$$;
