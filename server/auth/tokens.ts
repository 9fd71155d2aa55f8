// Issues and verifies bearer JWTs. The service signs its own (ES256, key in the database, published
// as JWKS) and optionally accepts an external identity provider's tokens (AUTH_* settings).
import { randomUUID } from "node:crypto";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type JWK,
  type JWTPayload,
  type CryptoKey,
} from "jose";
import type { Config } from "../config.ts";
import type { Database } from "../../db/database.ts";
import type { SecretBox } from "../secrets.ts";
import { activeSigningKeys, createSigningKeyOnce, type StoredSigningKey } from "../../db/signing-keys.ts";
import { isUuid } from "../../db/ids.ts";

export const ALLOWED_ROLES = ["client_admin", "platform_admin"] as const;

export interface Principal {
  subject: string;
  tenantId: string;
  roles: string[];
  tokenId: string | undefined;
  /** A webhook portal credential: accepted only by the operations declaring the PortalSession scheme. */
  portal?: true;
  /** The token's exp claim (seconds since the epoch); undefined when the token has none. */
  expiresAt: number | undefined;
}

/** The audience and scope of webhook portal credentials (POST /v1/webhooks/portal-sessions). */
export const PORTAL_AUDIENCE = "integrator-portal";
export const PORTAL_SCOPE = "webhooks:portal";
/** A portal principal's subject: the creator's, marked, so its rate limit and created_by stand apart. */
export const PORTAL_SUBJECT_PREFIX = "portal:";
/** The longest portal session PORTAL_SESSION_TTL_MINUTES allows; a longer-lived portal credential is refused. */
export const PORTAL_MAX_LIFETIME_SECONDS = 60 * 60;

export class TokenRejected extends Error {
  override name = "TokenRejected";
}

function claimAt(payload: JWTPayload, dotted: string): unknown {
  let current: unknown = payload;
  for (const key of dotted.split(".")) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function principalFrom(payload: JWTPayload, tenantClaim: string, rolesClaim: string): Principal {
  const tenantId = claimAt(payload, tenantClaim);
  const roles = claimAt(payload, rolesClaim);
  if (typeof payload.sub !== "string" || payload.sub.length === 0) throw new TokenRejected("token has no subject");
  if (typeof tenantId !== "string" || !isUuid(tenantId)) throw new TokenRejected("token has no valid tenant claim");
  const roleList = Array.isArray(roles) ? roles.filter((role): role is string => typeof role === "string") : [];
  return {
    subject: payload.sub,
    tenantId: tenantId.toLowerCase(),
    roles: roleList,
    tokenId: typeof payload.jti === "string" ? payload.jti : undefined,
    expiresAt: typeof payload.exp === "number" ? payload.exp : undefined,
  };
}

export interface TokenService {
  issue(input: {
    subject: string;
    tenantId: string;
    roles: string[];
    expiresInSeconds?: number;
    audience?: string;
    extraClaims?: Record<string, unknown>;
  }): Promise<{ token: string; expiresIn: number; /** The exp claim, seconds since the epoch. */ expiresAt: number }>;
  /**
   * Verifies an access token. With allowPortal, a portal credential (aud integrator-portal, scope
   * webhooks:portal) is accepted too and yields a principal with portal set; without it one is rejected.
   */
  verify(token: string, options?: { allowPortal?: boolean }): Promise<Principal>;
  /** Issues a webhook portal credential for one tenant (no roles; see PORTAL_AUDIENCE). */
  issuePortal(input: {
    subject: string;
    tenantId: string;
    expiresInSeconds: number;
  }): Promise<{ token: string; expiresIn: number; expiresAt: number }>;
  jwks(): { keys: JWK[] };
  issuer: string;
}

async function newSigningKey(box: SecretBox): Promise<StoredSigningKey> {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = randomUUID();
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: "ES256" };
  return {
    kid,
    algorithm: "ES256",
    public_jwk: publicJwk,
    private_jwk_encrypted: box.seal(JSON.stringify(privateJwk)),
  };
}

export async function createTokenService(db: Database, box: SecretBox, config: Config): Promise<TokenService> {
  let stored = await activeSigningKeys(db);
  if (stored.length === 0) stored = await createSigningKeyOnce(db, () => newSigningKey(box));
  const current = stored[0] as StoredSigningKey;
  const privateKey = (await importJWK(
    JSON.parse(box.open(current.private_jwk_encrypted)) as JWK,
    "ES256",
  )) as CryptoKey;
  const publicJwks = { keys: stored.map((key) => key.public_jwk as JWK) };
  const localKeys = createLocalJWKSet(publicJwks);
  const external = config.externalAuth;
  const remoteKeys = external
    ? createRemoteJWKSet(new URL(external.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 })
    : undefined;
  const issuer = config.publicBaseUrl;
  const verified = new Map<string, { principal: Principal; expiresAt: number }>();

  const service: TokenService = {
    issuer,
    jwks: () => publicJwks,
    async issue({ subject, tenantId, roles, expiresInSeconds, audience, extraClaims }) {
      const expiresIn = expiresInSeconds ?? config.accessTokenTtlSeconds;
      const expiresAt = Math.floor(Date.now() / 1000) + expiresIn;
      const token = await new SignJWT({ ...extraClaims, tenant_id: tenantId, roles })
        .setProtectedHeader({ alg: "ES256", kid: current.kid, typ: "JWT" })
        .setSubject(subject)
        .setIssuer(issuer)
        .setAudience(audience ?? config.selfAudience)
        .setIssuedAt()
        .setExpirationTime(expiresAt)
        .setJti(randomUUID())
        .sign(privateKey);
      return { token, expiresIn, expiresAt };
    },
    async issuePortal({ subject, tenantId, expiresInSeconds }) {
      return service.issue({
        subject,
        tenantId,
        roles: [],
        expiresInSeconds,
        audience: PORTAL_AUDIENCE,
        extraClaims: { scope: PORTAL_SCOPE },
      });
    },
    async verify(token, options = {}) {
      const principal = await verifyCached(token);
      if (principal.portal && !options.allowPortal) throw new TokenRejected("a portal credential is not accepted here");
      return principal;
    },
  };
  return service;

  async function verifyCached(token: string): Promise<Principal> {
    const cached = verified.get(token);
    if (cached && cached.expiresAt > Date.now()) return cached.principal;
    if (cached) verified.delete(token);
    const { principal, expiresAt } = await verifyUncached(token);
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value as string);
    verified.set(token, { principal, expiresAt });
    return principal;
  }

  async function verifyUncached(token: string): Promise<{ principal: Principal; expiresAt: number }> {
    let claimedIssuer: unknown;
    let claimedAudience: unknown;
    try {
      ({ iss: claimedIssuer, aud: claimedAudience } = decodeJwt(token));
    } catch {
      throw new TokenRejected("token is malformed");
    }
    try {
      if (external && remoteKeys && claimedIssuer === external.issuer) {
        const { payload } = await jwtVerify(token, remoteKeys, {
          issuer: external.issuer,
          ...(external.audience ? { audience: external.audience } : {}),
          algorithms: ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"],
          clockTolerance: 30,
        });
        return {
          principal: principalFrom(payload, external.tenantClaim, external.rolesClaim),
          expiresAt: expiryOf(payload),
        };
      }
      if (claimedAudience === PORTAL_AUDIENCE) {
        const { payload } = await jwtVerify(token, localKeys, {
          issuer,
          audience: PORTAL_AUDIENCE,
          algorithms: ["ES256"],
          clockTolerance: 5,
          requiredClaims: ["exp", "iat", "scope"],
        });
        if (payload.scope !== PORTAL_SCOPE) throw new TokenRejected("portal credential has the wrong scope");
        if ((payload.exp ?? 0) - (payload.iat ?? 0) > PORTAL_MAX_LIFETIME_SECONDS)
          throw new TokenRejected("portal credential lives longer than a portal session may");
        const principal = principalFrom(payload, "tenant_id", "roles");
        return {
          principal: {
            ...principal,
            subject: `${PORTAL_SUBJECT_PREFIX}${principal.subject}`,
            roles: [],
            portal: true,
          },
          expiresAt: expiryOf(payload),
        };
      }
      const { payload } = await jwtVerify(token, localKeys, {
        issuer,
        audience: config.selfAudience,
        algorithms: ["ES256"],
        clockTolerance: 5,
      });
      // Defence in depth: a credential carrying the portal scope is never an access token.
      if (payload.scope === PORTAL_SCOPE) throw new TokenRejected("a portal credential is not an access token");
      return { principal: principalFrom(payload, "tenant_id", "roles"), expiresAt: expiryOf(payload) };
    } catch (error) {
      if (error instanceof TokenRejected) throw error;
      throw new TokenRejected(error instanceof Error ? error.message : "token rejected");
    }
  }
}

/** Verified tokens are remembered until they expire (at most an hour), sparing a signature check per request. */
const VERIFIED_CACHE_SIZE = 10_000;

function expiryOf(payload: JWTPayload): number {
  const exp = typeof payload.exp === "number" ? payload.exp * 1000 : Date.now();
  return Math.min(exp, Date.now() + 3_600_000);
}
