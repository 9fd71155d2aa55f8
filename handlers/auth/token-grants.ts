// POST /token (RFC 6749): the password grant for users and the client_credentials grant for API
// clients (credentials in the form or in HTTP Basic). Abuse bounds: failed password grants back off per
// username in PostgreSQL (every replica sees the same count; an attempt is counted before its password is
// checked, so concurrent guesses cannot outrun the lock; unknown usernames are counted alike, so the
// answer reveals nothing), and secret checks (scrypt) run through the bounded hash gate: when too many
// wait, 503 at once. Disabled users and clients get no token.
import type { components } from "../../generated/openapi.ts";
import { ApiError, OAuthError } from "../../http/errors.ts";
import type { Services } from "../../foundation/services.ts";
import { findClient, findUserByUsername } from "../../db/principals.ts";
import { DUMMY_HASH, HashingBusy } from "../../foundation/auth/passwords.ts";
import { clearLoginFailures, purgeOldLoginFailures, reserveLoginAttempt } from "../../db/login-failures.ts";
import { recordRateLimited } from "../../foundation/metrics.ts";

/** Seconds a client is asked to wait when every secret-check slot is taken. */
const HASHING_RETRY_AFTER_SECONDS = 1;

async function checkSecret(services: Services, secret: string, stored: string): Promise<boolean> {
  try {
    return await services.hashGate.verify(secret, stored);
  } catch (error) {
    if (!(error instanceof HashingBusy)) throw error;
    throw new ApiError("SERVICE_UNAVAILABLE", "Too many credential checks are in progress; retry shortly", {
      headers: { "Retry-After": String(HASHING_RETRY_AFTER_SECONDS) },
      details: { reason: "credential_checks_saturated" },
    });
  }
}

function usernameLocked(seconds: number): ApiError {
  recordRateLimited("username");
  const wait = Math.max(1, Math.ceil(seconds));
  return new ApiError("RATE_LIMITED", `Too many failed sign-ins for this username; retry after ${wait} s`, {
    headers: { "Retry-After": String(wait) },
    details: { scope: "username", retry_after_seconds: wait },
  });
}

export type TokenRequestForm = components["schemas"]["TokenRequest"];
export type IssuedToken = components["schemas"]["TokenResponse"];

function basicCredentials(authorization: string | undefined): { clientId: string; clientSecret: string } | undefined {
  const match = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization ?? "");
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  // RFC 6749 §2.3.1: both parts are form-urlencoded before Basic encoding.
  const unescape = (value: string) => {
    try {
      return decodeURIComponent(value.replace(/\+/g, " "));
    } catch {
      return value;
    }
  };
  return { clientId: unescape(decoded.slice(0, colon)), clientSecret: unescape(decoded.slice(colon + 1)) };
}

export async function issueTokenFor(
  services: Services,
  form: TokenRequestForm,
  authorization: string | undefined,
): Promise<IssuedToken> {
  const grantType = form.grant_type;
  if (!grantType) throw new OAuthError("invalid_request", "grant_type is required");

  if (grantType === "password") {
    if (!form.username || !form.password)
      throw new OAuthError("invalid_request", "username and password are required for the password grant");
    const attempt = await reserveLoginAttempt(services.db, form.username, {
      freeFailures: services.config.login.freeFailures,
      baseSeconds: services.config.login.backoffBaseSeconds,
      maxSeconds: services.config.login.backoffMaxSeconds,
    });
    if (!attempt.allowed) throw usernameLocked(attempt.lockedForSeconds);
    const user = await findUserByUsername(services.db, form.username);
    // The attempt is already counted as a failure: a wrong password (or a busy hash gate) leaves it so.
    const valid = await checkSecret(services, form.password, user?.password_hash ?? DUMMY_HASH);
    if (!user || !valid) {
      if (Math.random() < 0.01) await purgeOldLoginFailures(services.db);
      throw new OAuthError("invalid_grant", "Invalid username or password");
    }
    await clearLoginFailures(services.db, form.username);
    // Same answer as a wrong password: a disabled account is not confirmed to exist.
    if (user.disabled_at) throw new OAuthError("invalid_grant", "Invalid username or password");
    const { token, expiresIn } = await services.tokens.issue({
      subject: user.id,
      tenantId: user.tenant_id,
      roles: user.roles,
    });
    return { access_token: token, token_type: "bearer", expires_in: expiresIn };
  }

  if (grantType === "client_credentials") {
    const basic = basicCredentials(authorization);
    const inForm = form.client_id !== undefined || form.client_secret !== undefined;
    if (basic && inForm)
      throw new OAuthError("invalid_request", "Use one client authentication method: HTTP Basic or the form, not both");
    const clientId = basic?.clientId ?? form.client_id;
    const clientSecret = basic?.clientSecret ?? form.client_secret;
    const challenge = basic ? { "WWW-Authenticate": 'Basic realm="integrator-api"' } : undefined;
    if (!clientId || !clientSecret)
      throw new OAuthError(
        "invalid_client",
        "Client authentication is required (client_id and client_secret)",
        challenge ? { headers: challenge } : {},
      );
    const client = await findClient(services.db, clientId);
    const valid = await checkSecret(services, clientSecret, client?.secret_hash ?? DUMMY_HASH);
    if (!client || !valid || client.disabled_at)
      throw new OAuthError("invalid_client", "Client authentication failed", challenge ? { headers: challenge } : {});
    const { token, expiresIn } = await services.tokens.issue({
      subject: client.client_id,
      tenantId: client.tenant_id,
      roles: client.roles,
    });
    return { access_token: token, token_type: "bearer", expires_in: expiresIn };
  }

  throw new OAuthError(
    "unsupported_grant_type",
    `grant_type ${JSON.stringify(grantType).slice(0, 80)} is not supported; use password or client_credentials`,
  );
}
