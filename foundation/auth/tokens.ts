// Issues and verifies bearer JWTs. The service signs its own (ES256, keys in the database, published
// as JWKS) and optionally accepts an external identity provider's tokens (AUTH_* settings).
//
// Verifying a token is one pipeline, whatever its source: the signature (our keys, or the provider's),
// then the claims every token must carry (exp and iat, exp - iat at most AUTH_MAX_TOKEN_LIFETIME_SECONDS,
// iat not in the future), then the principal (sub, tenant, roles), then whether that principal is still
// allowed (not disabled). `permits` is the one place deciding what a verified principal may call.
//
// Each process keeps its signing keys and the set of disabled principals in memory and reloads both from
// the database every AUTH_REFRESH_SECONDS (and at once when a token names a key it does not know), so a
// rotation or a disable reaches every replica within that time without a query per request.
import { randomUUID } from "node:crypto";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors as joseErrors,
  decodeJwt,
  decodeProtectedHeader,
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
import {
  createSigningKeyOnce,
  rotateSigningKey,
  verificationSigningKeys,
  type StoredSigningKey,
} from "../../db/signing-keys.ts";
import { disabledPrincipals } from "../../db/principals.ts";
import { portalCredentialRetired } from "../../db/portal-credentials.ts";
import type { Logger } from "../logger.ts";
import { isUuid } from "../../db/ids.ts";

export const ALLOWED_ROLES = ["client_admin", "platform_admin"] as const;

export interface Principal {
  subject: string;
  tenantId: string;
  roles: string[];
  tokenId: string | undefined;
  /** A webhook portal credential: accepted only by the operations declaring the PortalSession scheme. */
  portal?: true;
  /**
   * Of a portal credential: the tenant of the user or client who made the link (a platform_admin's may be
   * another than tenantId); the credential dies when that principal is disabled.
   */
  creatorTenantId?: string;
  /** The token's exp claim (seconds since the epoch); undefined when the token has none. */
  expiresAt: number | undefined;
  /** A portal credential's session start (its session_iat claim, else its iat; seconds since the epoch). */
  portalSessionStartedAt?: number;
  /**
   * A portal credential's link: its `sid` claim, made with the link and kept by every credential refreshed
   * from it; undefined for a credential made before links had one.
   */
  portalSessionId?: string;
}

/** The audience and scope of webhook portal credentials (POST /v1/webhooks/portal-sessions). */
export const PORTAL_AUDIENCE = "integrator-portal";
export const PORTAL_SCOPE = "webhooks:portal";
/** A portal principal's subject: the creator's, marked, so its rate limit and created_by stand apart. */
export const PORTAL_SUBJECT_PREFIX = "portal:";
/** The longest portal session PORTAL_SESSION_TTL_MINUTES allows; a longer-lived portal credential is refused. */
export const PORTAL_MAX_LIFETIME_SECONDS = 60 * 60;
/** How long after its link was made a portal session may be refreshed to (refreshWebhookPortalSession). */
export const PORTAL_SESSION_MAX_AGE_SECONDS = 8 * 60 * 60;
/** The portal credential's claim naming the tenant of the principal who made the link. */
export const PORTAL_CREATOR_TENANT_CLAIM = "creator_tenant_id";

export class TokenRejected extends Error {
  override name = "TokenRejected";
}

/**
 * What a verified, enabled principal may call: the protected operations need one of ALLOWED_ROLES. A portal
 * credential has no roles; verify() accepted it only for an operation declaring PortalSession.
 */
export function permits(principal: Principal): boolean {
  if (principal.portal) return true;
  return principal.roles.some((role) => (ALLOWED_ROLES as readonly string[]).includes(role));
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
   * webhooks:portal) is accepted too and yields a principal with portal set, unless a refresh has retired
   * it; without allowPortal one is rejected.
   */
  verify(token: string, options?: { allowPortal?: boolean }): Promise<Principal>;
  /**
   * Issues a webhook portal credential for one tenant (no roles; see PORTAL_AUDIENCE), made by `subject` of
   * `creatorTenantId`.
   */
  issuePortal(input: {
    subject: string;
    tenantId: string;
    creatorTenantId: string;
    expiresInSeconds: number;
    /** When the session's first link was made (seconds since the epoch); now when unset. */
    sessionStartedAt?: number;
    /** The session's id (`sid`), kept across refreshes; a new one when unset (a new link). */
    sessionId?: string;
  }): Promise<{ token: string; expiresIn: number; expiresAt: number }>;
  /** The public keys that verify: the signing key and retired keys whose tokens may still be valid. */
  jwks(): { keys: JWK[] };
  /** Reloads the signing keys and the disabled principals now. */
  refresh(): Promise<void>;
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

/**
 * signing-key:rotate: a new key signs from now on; the retired ones keep verifying until their tokens
 * expire, unless `revokePrevious` (a key leaked): then every earlier key stops verifying and leaves the
 * JWKS, in each process at its next reload (TokenService.refresh() for this one). Audited as `actor`'s.
 */
export async function rotateSigningKeys(
  db: Database,
  box: SecretBox,
  options: { revokePrevious?: boolean; actor: string },
): Promise<{ kid: string; retired: string[]; revoked: string[] }> {
  return rotateSigningKey(db, () => newSigningKey(box), options);
}

/** How long after retirement a key still verifies: the longest token lifetime plus clock tolerance. */
export function retiredKeyRetentionSeconds(config: Config): number {
  return config.maxTokenLifetimeSeconds + 300;
}

interface KeyState {
  signing: { kid: string; key: CryptoKey };
  publicJwks: { keys: JWK[] };
  /** The key ids in publicJwks: a remembered token of any other key is verified afresh (and refused). */
  kids: Set<string>;
  localKeys: ReturnType<typeof createLocalJWKSet>;
  /** `${tenantId}:${subject}` of every disabled user and client. */
  disabled: Set<string>;
  loadedAt: number;
}

/** Clock tolerance for our own tokens and the external provider's, in seconds. */
const SELF_TOLERANCE = 5;
const EXTERNAL_TOLERANCE = 30;
/** An unknown key id reloads the keys at most this often. */
const UNKNOWN_KID_RELOAD_MS = 1000;

export async function createTokenService(
  db: Database,
  box: SecretBox,
  config: Config,
  logger?: Logger,
): Promise<TokenService> {
  const privateKeys = new Map<string, CryptoKey>();

  async function load(): Promise<KeyState> {
    const retention = retiredKeyRetentionSeconds(config);
    let stored = await verificationSigningKeys(db, retention);
    if (!stored.some((key) => key.retired_at === null)) {
      await createSigningKeyOnce(db, () => newSigningKey(box));
      stored = await verificationSigningKeys(db, retention);
    }
    const current = stored.find((key) => key.retired_at === null) as StoredSigningKey;
    let privateKey = privateKeys.get(current.kid);
    if (!privateKey) {
      privateKey = (await importJWK(JSON.parse(box.open(current.private_jwk_encrypted)) as JWK, "ES256")) as CryptoKey;
      privateKeys.clear();
      privateKeys.set(current.kid, privateKey);
    }
    const publicJwks = { keys: stored.map((key) => key.public_jwk as JWK) };
    const disabled = new Set((await disabledPrincipals(db)).map((row) => `${row.tenant_id}:${row.subject}`));
    return {
      signing: { kid: current.kid, key: privateKey },
      publicJwks,
      kids: new Set(stored.map((key) => key.kid)),
      localKeys: createLocalJWKSet(publicJwks),
      disabled,
      loadedAt: Date.now(),
    };
  }

  let state = await load();
  let reloading: Promise<KeyState> | undefined;
  let lastForcedReload = 0;

  /** Reloads once at a time; on failure (database down) keeps the last state and retries after the interval. */
  function reload(): Promise<KeyState> {
    reloading ??= load()
      .then(
        (loaded) => (state = loaded),
        (error: unknown) => {
          logger?.warn({ err: error }, "could not reload signing keys and disabled principals; using the last ones");
          state = { ...state, loadedAt: Date.now() };
          return state;
        },
      )
      .finally(() => (reloading = undefined));
    return reloading;
  }

  async function fresh(): Promise<KeyState> {
    if (Date.now() - state.loadedAt >= config.authRefreshSeconds * 1000) return reload();
    return state;
  }

  const external = config.externalAuth;
  const remoteKeys = external
    ? createRemoteJWKSet(new URL(external.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 })
    : undefined;
  const issuer = config.tokenIssuer;
  const maxLifetime = config.maxTokenLifetimeSeconds;
  /** Verified tokens by text; `kid` is our key that signed it (undefined for the external provider's). */
  const verified = new Map<string, Verified>();

  /** The claims every token must carry, ours or the provider's (jose checks exp, nbf, iat's age and presence). */
  function checkLifetime(payload: JWTPayload): void {
    const { exp, iat } = payload;
    if (typeof exp !== "number" || typeof iat !== "number") throw new TokenRejected("token lacks exp or iat");
    if (exp - iat > maxLifetime)
      throw new TokenRejected(`token lifetime ${exp - iat} s exceeds the allowed ${maxLifetime} s`);
  }

  async function verifySignature(token: string, keys: KeyState): Promise<Verified> {
    let claimedIssuer: unknown;
    let claimedAudience: unknown;
    let kid: string | undefined;
    try {
      ({ iss: claimedIssuer, aud: claimedAudience } = decodeJwt(token));
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw new TokenRejected("token is malformed");
    }
    try {
      if (external && remoteKeys && claimedIssuer === external.issuer) {
        const { payload } = await jwtVerify(token, remoteKeys, {
          issuer: external.issuer,
          ...(external.audience ? { audience: external.audience } : {}),
          algorithms: ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"],
          clockTolerance: EXTERNAL_TOLERANCE,
          requiredClaims: ["exp", "iat"],
          maxTokenAge: maxLifetime,
        });
        checkLifetime(payload);
        return {
          principal: principalFrom(payload, external.tenantClaim, external.rolesClaim),
          expiresAt: expiryOf(payload),
          kid: undefined,
        };
      }
      if (claimedAudience === PORTAL_AUDIENCE) {
        const { payload } = await jwtVerify(token, keys.localKeys, {
          issuer,
          audience: PORTAL_AUDIENCE,
          algorithms: ["ES256"],
          clockTolerance: SELF_TOLERANCE,
          // jti: a refresh retires the credential by it (db/portal-credentials.ts).
          requiredClaims: ["exp", "iat", "scope", "jti"],
          maxTokenAge: Math.min(maxLifetime, PORTAL_MAX_LIFETIME_SECONDS),
        });
        checkLifetime(payload);
        if (payload.scope !== PORTAL_SCOPE) throw new TokenRejected("portal credential has the wrong scope");
        if ((payload.exp ?? 0) - (payload.iat ?? 0) > PORTAL_MAX_LIFETIME_SECONDS)
          throw new TokenRejected("portal credential lives longer than a portal session may");
        const principal = principalFrom(payload, "tenant_id", "roles");
        const sessionStartedAt = typeof payload.session_iat === "number" ? payload.session_iat : payload.iat;
        const sessionId = typeof payload.sid === "string" ? payload.sid : undefined;
        const creatorTenantId = payload[PORTAL_CREATOR_TENANT_CLAIM];
        if (typeof creatorTenantId !== "string" || !isUuid(creatorTenantId))
          throw new TokenRejected("portal credential does not name the tenant of its creator");
        if (principal.tokenId === undefined || !isUuid(principal.tokenId))
          throw new TokenRejected("portal credential has no valid jti");
        return {
          principal: {
            ...principal,
            subject: `${PORTAL_SUBJECT_PREFIX}${principal.subject}`,
            roles: [],
            portal: true,
            ...(sessionStartedAt === undefined ? {} : { portalSessionStartedAt: sessionStartedAt }),
            ...(sessionId === undefined ? {} : { portalSessionId: sessionId }),
            creatorTenantId: creatorTenantId.toLowerCase(),
          },
          expiresAt: expiryOf(payload),
          kid,
        };
      }
      const { payload } = await jwtVerify(token, keys.localKeys, {
        issuer,
        audience: config.selfAudience,
        algorithms: ["ES256"],
        clockTolerance: SELF_TOLERANCE,
        requiredClaims: ["exp", "iat"],
        maxTokenAge: maxLifetime,
      });
      checkLifetime(payload);
      // Defence in depth: a credential carrying the portal scope is never an access token.
      if (payload.scope === PORTAL_SCOPE) throw new TokenRejected("a portal credential is not an access token");
      return { principal: principalFrom(payload, "tenant_id", "roles"), expiresAt: expiryOf(payload), kid };
    } catch (error) {
      if (error instanceof TokenRejected) throw error;
      if (error instanceof joseErrors.JWKSNoMatchingKey) throw error;
      throw new TokenRejected(error instanceof Error ? error.message : "token rejected");
    }
  }

  /** The signature and claims, reloading the keys once when the token names a key this process does not know yet. */
  async function verifyUncached(token: string, keys: KeyState): Promise<Verified> {
    try {
      return await verifySignature(token, keys);
    } catch (error) {
      if (!(error instanceof joseErrors.JWKSNoMatchingKey)) throw error;
      if (Date.now() - lastForcedReload < UNKNOWN_KID_RELOAD_MS) throw new TokenRejected("unknown signing key");
      lastForcedReload = Date.now();
      try {
        return await verifySignature(token, await reload());
      } catch (retried) {
        if (retried instanceof joseErrors.JWKSNoMatchingKey) throw new TokenRejected("unknown signing key");
        throw retried;
      }
    }
  }

  const service: TokenService = {
    issuer,
    jwks: () => {
      // The JWKS is answered from memory; a stale one is reloaded for the next caller.
      if (Date.now() - state.loadedAt >= config.authRefreshSeconds * 1000) void reload();
      return state.publicJwks;
    },
    refresh: async () => {
      state = await load();
    },
    async issue({ subject, tenantId, roles, expiresInSeconds, audience, extraClaims }) {
      const expiresIn = expiresInSeconds ?? config.accessTokenTtlSeconds;
      if (expiresIn > maxLifetime)
        throw new RangeError(`a token may live at most ${maxLifetime} s (AUTH_MAX_TOKEN_LIFETIME_SECONDS)`);
      const { signing } = await fresh();
      const issuedAt = Math.floor(Date.now() / 1000);
      const expiresAt = issuedAt + expiresIn;
      const token = await new SignJWT({ ...extraClaims, tenant_id: tenantId, roles })
        .setProtectedHeader({ alg: "ES256", kid: signing.kid, typ: "JWT" })
        .setSubject(subject)
        .setIssuer(issuer)
        .setAudience(audience ?? config.selfAudience)
        .setIssuedAt(issuedAt)
        .setExpirationTime(expiresAt)
        .setJti(randomUUID())
        .sign(signing.key);
      return { token, expiresIn, expiresAt };
    },
    async issuePortal({ subject, tenantId, creatorTenantId, expiresInSeconds, sessionStartedAt, sessionId }) {
      return service.issue({
        subject,
        tenantId,
        roles: [],
        expiresInSeconds,
        audience: PORTAL_AUDIENCE,
        extraClaims: {
          scope: PORTAL_SCOPE,
          [PORTAL_CREATOR_TENANT_CLAIM]: creatorTenantId,
          session_iat: sessionStartedAt ?? Math.floor(Date.now() / 1000),
          sid: sessionId ?? randomUUID(),
        },
      });
    },
    async verify(token, options = {}) {
      const keys = await fresh();
      let entry = verified.get(token);
      // Expired, or signed by a key that no longer verifies (revoked): verified afresh, and refused.
      if (entry && (entry.expiresAt <= Date.now() || (entry.kid !== undefined && !keys.kids.has(entry.kid)))) {
        verified.delete(token);
        entry = undefined;
      }
      if (!entry) {
        entry = await verifyUncached(token, keys);
        if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value as string);
        verified.set(token, entry);
      }
      const { principal } = entry;
      if (principal.portal && !options.allowPortal) throw new TokenRejected("a portal credential is not accepted here");
      // A portal credential dies with the user or client that asked for the link, in that principal's own
      // tenant (a platform_admin's link for another tenant names both).
      const owner = principal.portal
        ? `${principal.creatorTenantId}:${principal.subject.slice(PORTAL_SUBJECT_PREFIX.length)}`
        : `${principal.tenantId}:${principal.subject}`;
      if (state.disabled.has(owner)) throw new TokenRejected("the token's user or client is disabled");
      // A refreshed portal credential is retired (read each time: a refresh may happen on another replica).
      // Its jti is a UUID (verifySignature refuses a portal credential without one).
      const { tokenId } = principal;
      if (principal.portal && tokenId !== undefined && (await portalCredentialRetired(db, principal.tenantId, tokenId)))
        throw new TokenRejected("the portal credential was refreshed; only its successor is valid");
      return principal;
    },
  };
  return service;
}

interface Verified {
  principal: Principal;
  expiresAt: number;
  kid: string | undefined;
}

/** Verified tokens are remembered until they expire (at most an hour), sparing a signature check per request. */
const VERIFIED_CACHE_SIZE = 10_000;

function expiryOf(payload: JWTPayload): number {
  const exp = typeof payload.exp === "number" ? payload.exp * 1000 : Date.now();
  return Math.min(exp, Date.now() + 3_600_000);
}
