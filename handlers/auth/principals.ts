// Creating the principals that obtain tokens: the password or client secret is hashed here, so the
// database layer only ever sees hashes.
import { randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { insertClient, insertUser, type ClientRecord, type UserRecord } from "../../db/principals.ts";
import { hashSecret } from "../../foundation/auth/passwords.ts";

export async function registerUser(
  db: Knex,
  input: { tenantId: string; username: string; password: string; roles: string[] },
): Promise<UserRecord> {
  return insertUser(db, {
    tenantId: input.tenantId,
    username: input.username,
    passwordHash: await hashSecret(input.password),
    roles: input.roles,
  });
}

/** A new API client with a generated id and secret; the secret is returned here once and stored hashed. */
export async function registerClient(
  db: Knex,
  input: { tenantId: string; roles: string[] },
): Promise<ClientRecord & { client_secret: string }> {
  const clientId = `cli_${randomBytes(12).toString("base64url")}`;
  const clientSecret = `cs_${randomBytes(32).toString("base64url")}`;
  const client = await insertClient(db, {
    tenantId: input.tenantId,
    clientId,
    secretHash: await hashSecret(clientSecret),
    roles: input.roles,
  });
  return { ...client, client_secret: clientSecret };
}
