// The credential `listen` authenticates with, from the environment (never the command line, which other
// users of the machine can read): an API client's id and secret (INTEGRATOR_CLIENT_ID and
// INTEGRATOR_CLIENT_SECRET: tokens are fetched and renewed), or INTEGRATOR_TOKEN, an access token, a portal
// credential or a whole portal link (`…/portal#token=…`). A portal credential is refreshed a minute before
// it expires (refreshWebhookPortalSession), one refresh at a time since each retires the credential before
// it, for as long as the service allows (8 hours after the link was made).
import {
  createIntegratorClient,
  createTokenProvider,
  type TokenProvider,
  type TokenSource,
} from "../src/index.ts";

export interface Credential {
  token: TokenSource;
  /** The service's base URL a portal link names, when INTEGRATOR_TOKEN is one. */
  linkBaseUrl?: string;
  /** What authenticates, for the ready line: never the secret itself. */
  kind: "API client" | "access token" | "portal credential";
}

const REFRESH_MARGIN_MS = 60_000;

/** The claims of a JWT, unverified (the service verifies it): only to read `exp` and `scope`. */
function claimsOf(token: string): { exp?: unknown; scope?: unknown } {
  try {
    const payload = token.split(".")[1] ?? "";
    return JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { exp?: unknown; scope?: unknown };
  } catch {
    return {};
  }
}

/** The credential in a portal link's fragment (`#token=…`). */
function credentialOfLink(link: URL): string | undefined {
  return new URLSearchParams(link.hash.replace(/^#/, "")).get("token") ?? undefined;
}

/** A portal credential that renews itself before it expires; the chain of credentials stays one. */
function refreshingPortalCredential(baseUrl: () => string, first: string): TokenSource {
  let current = first;
  let refreshing: Promise<string> | undefined;
  const refresh = async (): Promise<string> => {
    const api = createIntegratorClient({ baseUrl: baseUrl(), token: current, retry: false });
    const { data, response } = await api.POST("/v1/webhooks/portal-sessions/refresh");
    const next = data ? credentialOfLink(new URL(data.url)) : undefined;
    // Past the session's 8 hours (403) or refused: keep the current one while it lasts.
    if (next === undefined) {
      if (response.status === 403) throw new Error("the portal link is too old to be refreshed: make a new one");
      return current;
    }
    current = next;
    return current;
  };
  return async () => {
    const exp = claimsOf(current).exp;
    if (typeof exp !== "number" || exp * 1000 - Date.now() > REFRESH_MARGIN_MS) return current;
    refreshing ??= refresh().finally(() => (refreshing = undefined));
    return refreshing;
  };
}

/** The credential from `env`; undefined when none is set. `baseUrl` is read when a token is first needed. */
export function credentialFrom(
  env: Record<string, string | undefined>,
  baseUrl: () => string,
): Credential | undefined {
  const clientId = env.INTEGRATOR_CLIENT_ID;
  const clientSecret = env.INTEGRATOR_CLIENT_SECRET;
  if (clientId && clientSecret) {
    let provider: TokenProvider | undefined;
    return {
      kind: "API client",
      token: () => (provider ??= createTokenProvider({ baseUrl: baseUrl(), clientId, clientSecret }))(),
    };
  }
  const given = env.INTEGRATOR_TOKEN?.trim();
  if (!given) return undefined;
  const link = URL.canParse(given) ? new URL(given) : undefined;
  const token = link ? credentialOfLink(link) : given;
  if (!token) return undefined;
  const linkBaseUrl = link?.origin;
  if (claimsOf(token).scope === "webhooks:portal")
    return {
      kind: "portal credential",
      token: refreshingPortalCredential(baseUrl, token),
      ...(linkBaseUrl ? { linkBaseUrl } : {}),
    };
  return { kind: "access token", token, ...(linkBaseUrl ? { linkBaseUrl } : {}) };
}
