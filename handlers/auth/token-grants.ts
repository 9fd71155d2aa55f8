// POST /token (RFC 6749): the password grant for users and the client_credentials grant for API
// clients (credentials in the form or in HTTP Basic).
import type { components } from "../../generated/openapi.ts";
import { OAuthError } from "../../server/http/errors.ts";
import type { Services } from "../../server/services.ts";
import { findClient, findUserByUsername } from "../../db/principals.ts";
import { DUMMY_HASH, verifySecret } from "../../server/auth/passwords.ts";

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
    const user = await findUserByUsername(services.db, form.username);
    const valid = await verifySecret(form.password, user?.password_hash ?? DUMMY_HASH);
    if (!user || !valid) throw new OAuthError("invalid_grant", "Invalid username or password");
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
    const valid = await verifySecret(clientSecret, client?.secret_hash ?? DUMMY_HASH);
    if (!client || !valid)
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
