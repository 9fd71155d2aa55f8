// How the schema is laid out when PostgreSQL is outgrown and it is distributed with Citus (docs/operating.md,
// "Distributing with Citus"): every table of the integrator schema is either a tenant table, distributed by
// tenant_id and co-located with the others, or one of the global tables below, each with its role. The
// graphile-worker schema stays whole on the coordinator. test/db/tenant-keys.test.ts reads the catalog and
// fails on a table classified nowhere, on a tenant table whose primary key, unique index or foreign key does
// not lead with tenant_id, and on a statement of db/ that reads or writes a tenant table without naming its
// tenant. Nothing here runs in the service; it is the plan, checked.

/** The column every tenant table is distributed by. */
export const DISTRIBUTION_COLUMN = "tenant_id";

/**
 * The tenant tables, distributed by tenant_id and co-located, in the order create_distributed_table must
 * meet them: each after every tenant table its foreign keys refer to.
 */
export const DISTRIBUTED_TABLES: readonly string[] = [
  "intake_submissions",
  "intake_items",
  "audit_actions",
  "idempotency_keys",
  "routing_decisions",
  "partner_entitlements",
  "partner_callbacks",
  "webhook_subscriptions",
  "webhook_deliveries",
  "webhook_delivery_attempts",
  "webhook_delivery_counts",
  "webhook_events",
  "webhook_send_pacing",
  "webhook_listen_offers",
  "retired_portal_credentials",
];

export type GlobalRole = "reference" | "coordinator-local";

/**
 * The tables that hold no one tenant's rows, or are looked up without a tenant: reference tables (a copy on
 * every node, so tenant tables may refer to them and join them) and coordinator-local tables (left as they
 * are on the coordinator, never joined with a tenant table). Reference tables are listed in the order
 * create_reference_table must meet them.
 */
export const GLOBAL_TABLES: Readonly<Record<string, { role: GlobalRole; why: string }>> = {
  tenants: { role: "reference", why: "the tenants themselves; every tenant table refers to it" },
  partners: {
    role: "reference",
    why: "partners serve every tenant; entitlements and callbacks refer to them, launches join them",
  },
  users: {
    role: "reference",
    why: "a username is unique across tenants: a password grant names no tenant (users_username_key)",
  },
  api_clients: {
    role: "reference",
    why: "a client_id is unique across tenants: a client-credentials grant names no tenant (api_clients_client_id_key)",
  },
  signing_keys: { role: "coordinator-local", why: "the service's token signing keys, no tenant's" },
  login_failures: {
    role: "coordinator-local",
    why: "failed password grants, counted by username before any tenant is known",
  },
  rate_limits: {
    role: "coordinator-local",
    why: "rate-limit counters by principal or address (RATE_LIMIT_STORE=postgres), written on every request",
  },
  worker_heartbeats: {
    role: "coordinator-local",
    why: "the worker processes' heartbeats, joined with graphile-worker's tables",
  },
  applied_functions: { role: "coordinator-local", why: "which db/functions/ texts are applied (migrate())" },
  knex_migrations: { role: "coordinator-local", why: "the migrations applied (knex)" },
  knex_migrations_lock: { role: "coordinator-local", why: "knex's migration lock" },
};

/** Schemas left whole on the coordinator, with why. */
export const COORDINATOR_LOCAL_SCHEMAS: Readonly<Record<string, string>> = {
  graphile_worker:
    "graphile-worker's queue (jobs, queues, its migrations): the worker takes jobs with SKIP LOCKED and LISTEN/NOTIFY on one node, and jobs are added in the transaction that writes the tenant's rows",
};

/** The statements that distribute an integrator database already on a Citus coordinator, in order. */
export function distributionStatements(): string[] {
  const reference = Object.entries(GLOBAL_TABLES)
    .filter(([, table]) => table.role === "reference")
    .map(([name]) => `select create_reference_table('integrator.${name}');`);
  const [first, ...others] = DISTRIBUTED_TABLES;
  return [
    ...reference,
    `select create_distributed_table('integrator.${first}', '${DISTRIBUTION_COLUMN}');`,
    ...others.map(
      (name) =>
        `select create_distributed_table('integrator.${name}', '${DISTRIBUTION_COLUMN}', colocate_with => 'integrator.${first}');`,
    ),
  ];
}
