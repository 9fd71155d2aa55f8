// Tenants and the principals (users, API clients) that obtain tokens for them.
import { randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { hashSecret } from "../server/auth/passwords.ts";

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
  const [tenant] = await db("integrator.tenants").insert({ name }).returning(["id", "name"]);
  return tenant as Tenant;
}

export async function tenantExists(db: Knex, tenantId: string): Promise<boolean> {
  return Boolean(await db("integrator.tenants").where({ id: tenantId }).first("id"));
}

export async function countTenants(db: Knex): Promise<number> {
  const row = (await db("integrator.tenants").count<{ count: number }[]>("* as count"))[0];
  return Number(row?.count ?? 0);
}

export async function createUser(
  db: Knex,
  input: { tenantId: string; username: string; password: string; roles: string[] },
): Promise<UserRecord> {
  const [user] = await db("integrator.users")
    .insert({
      tenant_id: input.tenantId,
      username: input.username,
      password_hash: await hashSecret(input.password),
      roles: input.roles,
    })
    .returning(["id", "tenant_id", "username", "roles"]);
  return user as UserRecord;
}

export async function findUserByUsername(
  db: Knex,
  username: string,
): Promise<(UserRecord & { password_hash: string }) | undefined> {
  return db("integrator.users")
    .whereRaw("lower(username) = lower(?)", [username])
    .first("id", "tenant_id", "username", "roles", "password_hash");
}

export async function createClient(
  db: Knex,
  input: { tenantId: string; roles: string[] },
): Promise<ClientRecord & { client_secret: string }> {
  const clientId = `cli_${randomBytes(12).toString("base64url")}`;
  const clientSecret = `cs_${randomBytes(32).toString("base64url")}`;
  const [client] = await db("integrator.api_clients")
    .insert({
      tenant_id: input.tenantId,
      client_id: clientId,
      secret_hash: await hashSecret(clientSecret),
      roles: input.roles,
    })
    .returning(["client_id", "tenant_id", "roles"]);
  return { ...(client as ClientRecord), client_secret: clientSecret };
}

export async function findClient(
  db: Knex,
  clientId: string,
): Promise<(ClientRecord & { secret_hash: string }) | undefined> {
  return db("integrator.api_clients")
    .where({ client_id: clientId })
    .first("client_id", "tenant_id", "roles", "secret_hash");
}
