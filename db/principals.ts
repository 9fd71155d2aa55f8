// Tenants and the principals (users, API clients) that obtain tokens for them.
import type { Knex } from "knex";

export interface Tenant {
  id: string;
  name: string;
}

export interface UserRecord {
  id: string;
  tenant_id: string;
  username: string;
  roles: string[];
}

export interface ClientRecord {
  client_id: string;
  tenant_id: string;
  roles: string[];
}

export async function createTenant(db: Knex, name: string): Promise<Tenant> {
  const [tenant] = (await db("integrator.tenants").insert({ name }).returning(["id", "name"])) as Tenant[];
  return tenant as Tenant;
}

export async function tenantExists(db: Knex, tenantId: string): Promise<boolean> {
  return Boolean(await db("integrator.tenants").where({ id: tenantId }).first("id"));
}

/** A tenant's registered name; undefined when no such tenant is registered. */
export async function tenantName(db: Knex, tenantId: string): Promise<string | undefined> {
  const row = (await db("integrator.tenants").where({ id: tenantId }).first("name")) as { name: string } | undefined;
  return row?.name;
}

/**
 * Every tenant's id, in order: what a purge across tenants iterates, so that each of its statements names
 * one tenant (tenants is a reference table under Citus; see docs/operating.md, Distributing with Citus).
 */
export async function tenantIds(db: Knex): Promise<string[]> {
  const rows = (await db("integrator.tenants").orderBy("id").select("id")) as { id: string }[];
  return rows.map((row) => row.id);
}

export async function countTenants(db: Knex): Promise<number> {
  const row = (await db("integrator.tenants").count<{ count: number }[]>("* as count"))[0];
  return Number(row?.count ?? 0);
}

/** Stores a user; the caller hashes the password (handlers/auth/principals.ts). */
export async function insertUser(
  db: Knex,
  input: { tenantId: string; username: string; passwordHash: string; roles: string[] },
): Promise<UserRecord> {
  const [user] = (await db("integrator.users")
    .insert({
      tenant_id: input.tenantId,
      username: input.username,
      password_hash: input.passwordHash,
      roles: input.roles,
    })
    .returning(["id", "tenant_id", "username", "roles"])) as UserRecord[];
  return user as UserRecord;
}

export async function findUserByUsername(
  db: Knex,
  username: string,
): Promise<(UserRecord & { password_hash: string; disabled_at: Date | null }) | undefined> {
  return db("integrator.users")
    .whereRaw("lower(username) = lower(?)", [username])
    .first("id", "tenant_id", "username", "roles", "password_hash", "disabled_at");
}

/** Disables a user (by username); its tokens stop working. Undefined when there is no such user. */
export async function disableUser(
  db: Knex,
  username: string,
): Promise<(UserRecord & { disabled_at: Date }) | undefined> {
  const [user] = (await db("integrator.users")
    .whereRaw("lower(username) = lower(?)", [username])
    .update({ disabled_at: db.raw("coalesce(disabled_at, now())") })
    .returning(["id", "tenant_id", "username", "roles", "disabled_at"])) as (UserRecord & { disabled_at: Date })[];
  return user;
}

/** Disables an API client; its tokens stop working. Undefined when there is no such client. */
export async function disableClient(
  db: Knex,
  clientId: string,
): Promise<(ClientRecord & { disabled_at: Date }) | undefined> {
  const [client] = (await db("integrator.api_clients")
    .where({ client_id: clientId })
    .update({ disabled_at: db.raw("coalesce(disabled_at, now())") })
    .returning(["client_id", "tenant_id", "roles", "disabled_at"])) as (ClientRecord & { disabled_at: Date })[];
  return client;
}

/** Every disabled principal as the (tenant, subject) its tokens carry: a user's id, a client's client_id. */
export async function disabledPrincipals(db: Knex): Promise<{ tenant_id: string; subject: string }[]> {
  const result = await db.raw<{ rows: { tenant_id: string; subject: string }[] }>(
    `select tenant_id::text, id::text as subject from integrator.users where disabled_at is not null
     union all
     select tenant_id::text, client_id as subject from integrator.api_clients where disabled_at is not null`,
  );
  return result.rows;
}

/** Stores an API client; the caller generates and hashes the secret (handlers/auth/principals.ts). */
export async function insertClient(
  db: Knex,
  input: { tenantId: string; clientId: string; secretHash: string; roles: string[] },
): Promise<ClientRecord> {
  const [client] = (await db("integrator.api_clients")
    .insert({
      tenant_id: input.tenantId,
      client_id: input.clientId,
      secret_hash: input.secretHash,
      roles: input.roles,
    })
    .returning(["client_id", "tenant_id", "roles"])) as ClientRecord[];
  return client as ClientRecord;
}

export async function findClient(
  db: Knex,
  clientId: string,
): Promise<(ClientRecord & { secret_hash: string; disabled_at: Date | null }) | undefined> {
  return db("integrator.api_clients")
    .where({ client_id: clientId })
    .first("client_id", "tenant_id", "roles", "secret_hash", "disabled_at");
}

/**
 * The user (by id or username) or API client (by client_id) of a tenant that `subject` names, with the
 * subject its tokens carry (a user's id, a client's client_id); undefined when there is none.
 */
export async function findPrincipalOfTenant(
  db: Knex,
  tenantId: string,
  subject: string,
): Promise<{ kind: "user" | "client"; subject: string; roles: string[]; disabled: boolean } | undefined> {
  const result = await db.raw<{
    rows: { kind: "user" | "client"; subject: string; roles: string[]; disabled: boolean }[];
  }>(
    `select 'user' as kind, id::text as subject, roles, disabled_at is not null as disabled
       from integrator.users
      where tenant_id = ?::uuid and (id::text = lower(?) or lower(username) = lower(?))
     union all
     select 'client', client_id, roles, disabled_at is not null
       from integrator.api_clients
      where tenant_id = ?::uuid and client_id = ?
     limit 1`,
    [tenantId, subject, subject, tenantId, subject],
  );
  return result.rows[0];
}
