// The polls of listen sessions waiting in this process, woken when the worker offers their session a
// delivery (the offer's notification, db/notifications.ts, names the tenant and the session). At most one
// poll waits per session: a new one ends the older one's wait, so waiting polls are bounded by the
// sessions (WEBHOOK_LISTEN_SESSIONS_PER_TENANT per tenant). Without notifications (none connected, or the
// connection lost) a waiting poll looks again every second; with them, every ten seconds in case one was
// missed while the connection was being made again.

/** Why a wait ended. */
export type WaitEnd = "woken" | "timeout" | "superseded" | "closed" | "aborted";

const RECHECK_CONNECTED_MS = 10_000;
const RECHECK_UNCONNECTED_MS = 1000;

export class ListenWakeUps {
  readonly #waiting = new Map<string, (end: WaitEnd) => void>();
  #closed = false;
  /** Whether offers' notifications arrive (set by whoever listens for them). */
  connected = false;

  /** The key of a session: its tenant and id, as the offer's notification names them. */
  static key(tenantId: string, sessionId: string): string {
    return `${tenantId} ${sessionId}`;
  }

  /** True once the process shuts down: waits end at once. */
  get closed(): boolean {
    return this.#closed;
  }

  /** How long a waiting poll may wait before it looks again by itself. */
  get recheckMs(): number {
    return this.connected ? RECHECK_CONNECTED_MS : RECHECK_UNCONNECTED_MS;
  }

  /**
   * Waits until the session is woken, `ms` pass, another poll of the session waits (it takes over), the
   * process shuts down or `signal` aborts; says which.
   */
  wait(key: string, ms: number, signal?: AbortSignal): Promise<WaitEnd> {
    if (this.#closed) return Promise.resolve("closed");
    if (signal?.aborted) return Promise.resolve("aborted");
    this.#waiting.get(key)?.("superseded");
    return new Promise<WaitEnd>((resolve) => {
      const end = (why: WaitEnd) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (this.#waiting.get(key) === end) this.#waiting.delete(key);
        resolve(why);
      };
      const onAbort = () => end("aborted");
      const timer = setTimeout(() => end("timeout"), Math.max(0, ms));
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.set(key, end);
    });
  }

  /** Wakes the poll waiting for this session, if one is. */
  wake(key: string): void {
    this.#waiting.get(key)?.("woken");
  }

  /** Ends every wait, and every later one at once (the process shuts down). */
  close(): void {
    this.#closed = true;
    for (const end of [...this.#waiting.values()]) end("closed");
  }
}
