// A bearer token from the service's OAuth 2.0 token endpoint (RFC 6749): the client credentials grant for
// API clients, the password grant for users. The token is kept and reused until shortly before it expires;
// callers asking at the same time share one token request.
import { retryingFetch, type Fetch, type RetryOptions } from "./retries.ts";

/** An API client's credentials (`npm run admin -- client:create`). */
export interface ClientCredentialsGrant {
  clientId: string;
  clientSecret: string;
  /** How the credentials travel: in the form (default) or as HTTP Basic (RFC 6749 §2.3.1). */
  clientAuthentication?: "form" | "basic";
}

/** A user's name and password. */
export interface PasswordGrant {
  username: string;
  password: string;
}

export type TokenProviderOptions = (ClientCredentialsGrant | PasswordGrant) & {
  /** The service's base URL, e.g. `https://integrator.example.com`; tokens come from `<baseUrl>/token`. */
  baseUrl: string;
  /** Another token endpoint (an identity provider the service trusts) instead of `<baseUrl>/token`. */
  tokenUrl?: string;
  /**
   * Seconds before `expires_in` runs out at which a new token is fetched (default 60; never sooner than
   * halfway through a token's life).
   */
  refreshMarginSeconds?: number;
  /** Retries of the token request on 429 and 503 (`Retry-After`) and network errors; `false` for none. */
  retry?: RetryOptions | false;
  /** A fetch of your own (proxies, tests); the global fetch by default. */
  fetch?: Fetch;
  /** The clock in milliseconds since the epoch, `Date.now` by default (tests move it). */
  now?: () => number;
};

/** Returns a current access token; `invalidate()` drops the kept one so that the next call fetches anew. */
export interface TokenProvider {
  (): Promise<string>;
  invalidate(): void;
}

/** The token endpoint refused (RFC 6749 §5.2 `error`, or the error envelope's code) or answered nonsense. */
export class TokenRequestError extends Error {
  override readonly name = "TokenRequestError";
  readonly status: number;
  /** `invalid_client`, `invalid_grant`, ... or the service's error code (`RATE_LIMITED`, ...). */
  readonly error: string | undefined;
  constructor(status: number, error: string | undefined, message: string) {
    super(message);
    this.status = status;
    this.error = error;
  }
}

interface KeptToken {
  accessToken: string;
  /** When to fetch the next one. */
  refreshAt: number;
  /** When it stops being accepted. */
  expiresAt: number;
}

const DEFAULT_REFRESH_MARGIN_SECONDS = 60;

function formEncoded(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, "+");
}

function tokenForm(options: TokenProviderOptions): { form: URLSearchParams; authorization?: string } {
  if ("username" in options)
    return {
      form: new URLSearchParams({ grant_type: "password", username: options.username, password: options.password }),
    };
  if (options.clientAuthentication === "basic") {
    // RFC 6749 §2.3.1: each part form-urlencoded, then Basic.
    const pair = `${formEncoded(options.clientId)}:${formEncoded(options.clientSecret)}`;
    return { form: new URLSearchParams({ grant_type: "client_credentials" }), authorization: `Basic ${btoa(pair)}` };
  }
  return {
    form: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: options.clientId,
      client_secret: options.clientSecret,
    }),
  };
}

async function refusal(response: Response): Promise<TokenRequestError> {
  const text = await response.text();
  let body: { error?: unknown; error_description?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // not JSON: the status says enough
  }
  const envelope = typeof body.error === "object" && body.error !== null ? (body.error as Record<string, unknown>) : {};
  const code =
    typeof body.error === "string" ? body.error : typeof envelope.code === "string" ? envelope.code : undefined;
  const detail =
    typeof body.error_description === "string"
      ? body.error_description
      : typeof envelope.message === "string"
        ? envelope.message
        : response.statusText;
  return new TokenRequestError(
    response.status,
    code,
    `The token endpoint answered ${response.status} ${code ?? ""}: ${detail}`,
  );
}

/**
 * A token provider for `createIntegratorClient({ token })`: it fetches a token by the given grant, keeps it
 * until `refreshMarginSeconds` before it expires, and fetches the next one once for every caller waiting.
 * Should a refresh fail while the kept token is still valid, that token is returned and the next call
 * tries again.
 */
export function createTokenProvider(options: TokenProviderOptions): TokenProvider {
  const tokenUrl = options.tokenUrl ?? `${options.baseUrl.replace(/\/+$/, "")}/token`;
  const now = options.now ?? Date.now;
  const margin = options.refreshMarginSeconds ?? DEFAULT_REFRESH_MARGIN_SECONDS;
  const send = retryingFetch(options.fetch ?? ((request) => fetch(request)), {
    retry: options.retry,
    alwaysSafe: true,
  });
  let kept: KeptToken | undefined;
  let pending: Promise<KeptToken> | undefined;

  async function requestToken(): Promise<KeptToken> {
    const askedAt = now();
    const { form, authorization } = tokenForm(options);
    const headers: Record<string, string> = {
      "Content-Type": "application/x-www-form-urlencoded",
      Accept: "application/json",
    };
    if (authorization) headers.Authorization = authorization;
    const response = await send(new Request(tokenUrl, { method: "POST", headers, body: form.toString() }));
    if (!response.ok) throw await refusal(response);
    const body = (await response.json()) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== "string" || body.access_token === "")
      throw new TokenRequestError(response.status, undefined, "The token endpoint answered without an access_token");
    // No expires_in: the token is not kept.
    const lifetime = typeof body.expires_in === "number" && body.expires_in > 0 ? body.expires_in : 0;
    const early = Math.min(Math.max(0, margin), lifetime / 2);
    return {
      accessToken: body.access_token,
      refreshAt: askedAt + (lifetime - early) * 1000,
      expiresAt: askedAt + lifetime * 1000,
    };
  }

  const provider = async (): Promise<string> => {
    if (kept && now() < kept.refreshAt) return kept.accessToken;
    const stale = kept;
    pending ??= requestToken()
      .then((token) => (kept = token))
      .finally(() => (pending = undefined));
    try {
      return (await pending).accessToken;
    } catch (error) {
      if (stale && kept === stale && now() < stale.expiresAt) return stale.accessToken;
      throw error;
    }
  };
  return Object.assign(provider, {
    invalidate() {
      kept = undefined;
    },
  });
}
