// Finished Idempotency-Key responses kept in this process's memory, so that a replay (a client sending
// again a request it already sent) is answered without a database round trip. What is kept is what the
// database holds, and it cannot change there: a finished response is written once, with the work it
// describes, and is forgotten only once it has expired. So an entry is served until shortly before its
// expiry (the database's clock decides expiry; `marginMs` covers a skew between the two clocks) and then
// dropped; whatever is not here is looked up in the database as before.
//
// Bounded in bytes (API_IDEMPOTENCY_MEMORY_MB; 0 keeps nothing). When full, a tenant holding more than an
// even share gives up its own least recently used response; any other tenant's insert pushes out the least
// recently used response overall. So one tenant's flood of keys evicts its own responses, not everyone
// else's, and no eviction is worse than the database look-up every replay made before.

/** A finished response as it was sent, and when the database forgets it (ms since the epoch, its clock). */
export interface FinishedResponse {
  fingerprint: string;
  status: number;
  /** The response body exactly as sent (replays send these bytes). */
  json: string;
  expiresAt: number;
}

interface Entry extends FinishedResponse {
  tenantId: string;
  key: string;
  bytes: number;
}

/** Bytes an entry is counted as: its strings (UTF-16) and a fixed overhead for the objects and map slots. */
const ENTRY_OVERHEAD_BYTES = 160;
const entryBytes = (key: string, response: FinishedResponse) =>
  2 * (key.length + response.fingerprint.length + response.json.length) + ENTRY_OVERHEAD_BYTES;

/** Clock skew between this process and PostgreSQL that an entry's expiry allows for. */
export const EXPIRY_MARGIN_MS = 5_000;

export class ReplayMemory {
  /** Every entry, least recently used first. */
  private readonly all = new Map<string, Entry>();
  /** Each tenant's entries, least recently used first, and their bytes. */
  private readonly tenants = new Map<string, { entries: Map<string, Entry>; bytes: number }>();
  private total = 0;
  private readonly maxBytes: number;
  private readonly now: () => number;
  private readonly marginMs: number;

  constructor(maxBytes: number, now: () => number = Date.now, marginMs = EXPIRY_MARGIN_MS) {
    this.maxBytes = maxBytes;
    this.now = now;
    this.marginMs = marginMs;
  }

  /** Whether anything can be kept at all (API_IDEMPOTENCY_MEMORY_MB above 0). */
  get keeps(): boolean {
    return this.maxBytes > 0;
  }

  /** Bytes held now (for tests and metrics). */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.all.size;
  }

  /** The finished response under `key` (which names its tenant, subject, route and key), unless it is about to expire. */
  find(key: string): FinishedResponse | undefined {
    const entry = this.all.get(key);
    if (entry === undefined) return undefined;
    if (this.now() >= entry.expiresAt - this.marginMs) {
      this.drop(entry);
      return undefined;
    }
    this.touch(entry);
    return entry;
  }

  /** Keeps a finished response of `tenantId` under `key`, unless it is too close to expiry or too large to keep. */
  remember(tenantId: string, key: string, response: FinishedResponse): void {
    const bytes = entryBytes(key, response);
    if (bytes > this.maxBytes || this.now() >= response.expiresAt - this.marginMs) return;
    const previous = this.all.get(key);
    if (previous !== undefined) this.drop(previous);
    const entry: Entry = { ...response, tenantId, key, bytes };
    let tenant = this.tenants.get(tenantId);
    if (tenant === undefined) {
      tenant = { entries: new Map(), bytes: 0 };
      this.tenants.set(tenantId, tenant);
    }
    tenant.entries.set(key, entry);
    tenant.bytes += bytes;
    this.all.set(key, entry);
    this.total += bytes;
    while (this.total > this.maxBytes) {
      const evenShare = this.maxBytes / this.tenants.size;
      const victim =
        tenant.bytes > evenShare
          ? (tenant.entries.values().next().value as Entry)
          : (this.all.values().next().value as Entry);
      this.drop(victim);
    }
  }

  private touch(entry: Entry): void {
    const tenant = this.tenants.get(entry.tenantId);
    this.all.delete(entry.key);
    this.all.set(entry.key, entry);
    tenant?.entries.delete(entry.key);
    tenant?.entries.set(entry.key, entry);
  }

  private drop(entry: Entry): void {
    this.all.delete(entry.key);
    this.total -= entry.bytes;
    const tenant = this.tenants.get(entry.tenantId);
    if (tenant === undefined) return;
    tenant.entries.delete(entry.key);
    tenant.bytes -= entry.bytes;
    if (tenant.entries.size === 0) this.tenants.delete(entry.tenantId);
  }
}
