// The polls of listen sessions waiting in this process, woken when the worker offers their session a
// delivery (the offer's notification, db/notifications.ts, names the tenant and the session). A poll
// watches its session before it looks for offers, so that an offer made between the look and the wait
// still wakes it. At most one poll watches a session: a new one ends the older one's watch, so waiting
// polls are bounded by the sessions (WEBHOOK_LISTEN_SESSIONS_PER_TENANT per tenant). Without notifications
// (none connected, or the connection lost) a waiting poll looks again every second; with them, every ten
// seconds in case one was missed while the connection was being made again.

/** Why a watch ended. */
export type WaitEnd = "woken" | "timeout" | "superseded" | "closed" | "aborted";

/** One poll's watch of its session. */
export interface Watch {
  /**
   * Waits until the session is woken (at once when it was woken since the watch began), `ms` pass, another
   * poll watches the session, the process shuts down or `signal` aborts; says which.
   */
  until(ms: number, signal?: AbortSignal): Promise<WaitEnd>;
  /** Stops watching, for a poll that answers without waiting. */
  stop(): void;
}

const RECHECK_CONNECTED_MS = 10_000;
const RECHECK_UNCONNECTED_MS = 1000;

export class ListenWakeUps {
  readonly #watching = new Map<string, (end: WaitEnd) => void>();
  #closed = false;
  /** Whether offers' notifications arrive (set by whoever listens for them). */
  connected = false;

  /** The key of a session: its tenant and id, as the offer's notification names them. */
  static key(tenantId: string, sessionId: string): string {
    return `${tenantId} ${sessionId}`;
  }

  /** True once the process shuts down: watches end at once. */
  get closed(): boolean {
    return this.#closed;
  }

  /** How long a waiting poll may wait before it looks again by itself. */
  get recheckMs(): number {
    return this.connected ? RECHECK_CONNECTED_MS : RECHECK_UNCONNECTED_MS;
  }

  /** Starts watching the session `key`, ending another poll's watch of it. */
  watch(key: string): Watch {
    let ended: WaitEnd | undefined = this.#closed ? "closed" : undefined;
    let settle: ((why: WaitEnd) => void) | undefined;
    const end = (why: WaitEnd) => {
      if (ended !== undefined) return;
      ended = why;
      if (this.#watching.get(key) === end) this.#watching.delete(key);
      settle?.(why);
    };
    if (ended === undefined) {
      this.#watching.get(key)?.("superseded");
      this.#watching.set(key, end);
    }
    return {
      until: (ms, signal) =>
        new Promise<WaitEnd>((resolve) => {
          if (ended !== undefined) return resolve(ended);
          const onAbort = () => end("aborted");
          const timer = setTimeout(() => end("timeout"), Math.max(0, ms));
          settle = (why) => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", onAbort);
            resolve(why);
          };
          if (signal?.aborted) return end("aborted");
          signal?.addEventListener("abort", onAbort, { once: true });
        }),
      stop: () => end("timeout"),
    };
  }

  /** Wakes the poll watching this session, if one is. */
  wake(key: string): void {
    this.#watching.get(key)?.("woken");
  }

  /** Ends every watch, and every later one at once (the process shuts down). */
  close(): void {
    this.#closed = true;
    for (const end of [...this.#watching.values()]) end("closed");
  }
}
