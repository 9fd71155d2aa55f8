// The portal credential: taken from the link's fragment (#token=...), kept for this tab only, and
// removed from the address bar so it is not copied, bookmarked or shown on screen.
const STORAGE_KEY = "integrator-portal-token";

export interface Session {
  token: string;
  tenantId: string | undefined;
  /** Milliseconds since the epoch. */
  expiresAt: number | undefined;
}

function claims(token: string): { tenant_id?: unknown; exp?: unknown } {
  try {
    const part = token.split(".")[1] ?? "";
    const json = atob(part.replace(/-/g, "+").replace(/_/g, "/"));
    return JSON.parse(json) as { tenant_id?: unknown; exp?: unknown };
  } catch {
    return {};
  }
}

/** The session of a credential: its tenant and expiry read from its claims (the service checks them). */
export function sessionOf(token: string): Session {
  const { tenant_id, exp } = claims(token);
  return {
    token,
    tenantId: typeof tenant_id === "string" ? tenant_id : undefined,
    expiresAt: typeof exp === "number" ? exp * 1000 : undefined,
  };
}

/** Keeps a refreshed credential for this tab (a reload goes on with it). */
export function storeSession(token: string): Session {
  try {
    sessionStorage.setItem(STORAGE_KEY, token);
  } catch {
    // Storage may be blocked in a third-party frame; the page goes on with the credential in memory.
  }
  return sessionOf(token);
}

export function readSession(): Session | undefined {
  const fragment = new URLSearchParams(window.location.hash.replace(/^#/, ""));
  const fromLink = fragment.get("token");
  let token: string | null = fromLink;
  if (fromLink) {
    try {
      sessionStorage.setItem(STORAGE_KEY, fromLink);
    } catch {
      // Storage may be blocked in a third-party frame; the page still works until it is reloaded.
    }
    history.replaceState(null, "", window.location.pathname + window.location.search);
  } else {
    try {
      token = sessionStorage.getItem(STORAGE_KEY);
    } catch {
      token = null;
    }
  }
  if (!token) return undefined;
  return sessionOf(token);
}

export function forgetSession(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing stored
  }
}
