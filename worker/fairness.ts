// Fair sharing of the worker's slots between tenants, on graphile-worker's own means (docs/architecture.md,
// fairness between tenants). Every delivery job (deliver_webhook, and deliver_webhooks for an event's deliveries) carries the
// flag `tenant:<id>` (integrator.queue_delivery_jobs) and graphile-worker asks `forbiddenFlags()` before each
// job it takes; the answer names the tenants this worker must not take a job of right now:
//
// - the worker runs `slots + 1` jobs at once: any tenant may hold up to `slots` of them (a tenant alone
//   gets the worker's whole WORKER_CONCURRENCY, as before), and the last, spare slot only goes to a
//   tenant with nothing in flight here. However long one tenant's attempts hang, another tenant's
//   fresh delivery finds a slot at once; the job order (priority = backlog rank) puts it first.
// - which tenant a job belongs to is only known once graphile-worker has taken it, so the decision for
//   the spare slot waits until the other slots' fetches have settled (no race hands it to the busy
//   tenant). The decision and its bookkeeping are synchronous otherwise.
//
// Inside the jobs, the attempts themselves are I/O: SendLimits (below) lets them run concurrently, an
// event's deliveries all at once, within bounds per worker, per endpoint and per tenant.
import { EventEmitter } from "node:events";
import type { Job, WorkerEvents } from "graphile-worker";

const TENANT_FLAG = "tenant:";

export function tenantOfJob(job: Pick<Job, "flags">): string | undefined {
  const flags = job.flags ?? {};
  for (const flag of Object.keys(flags)) if (flag.startsWith(TENANT_FLAG)) return flag.slice(TENANT_FLAG.length);
  return undefined;
}

export class TenantSlots {
  readonly #slots: number;
  /** Jobs running here by tenant (jobs without a tenant count in #running only). */
  readonly #inFlight = new Map<string, number>();
  #running = 0;
  /** Slots that were answered and are asking graphile-worker for a job. */
  #fetching = 0;
  #waiters: (() => void)[] = [];
  readonly events: WorkerEvents;

  /** `slots` is WORKER_CONCURRENCY; run graphile-worker with `concurrency` (slots + 1). */
  constructor(slots: number) {
    this.#slots = slots;
    this.events = new EventEmitter() as WorkerEvents;
    this.events.on("job:start", ({ job }) => {
      this.#fetching = Math.max(0, this.#fetching - 1);
      this.#running++;
      const tenant = tenantOfJob(job);
      if (tenant) this.#inFlight.set(tenant, (this.#inFlight.get(tenant) ?? 0) + 1);
      this.#wake();
    });
    const fetchedNothing = () => {
      this.#fetching = Math.max(0, this.#fetching - 1);
      this.#wake();
    };
    this.events.on("worker:getJob:empty", fetchedNothing);
    this.events.on("worker:getJob:error", fetchedNothing);
    this.events.on("job:complete", ({ job }) => {
      this.#running = Math.max(0, this.#running - 1);
      const tenant = tenantOfJob(job);
      if (tenant) {
        const left = (this.#inFlight.get(tenant) ?? 1) - 1;
        if (left > 0) this.#inFlight.set(tenant, left);
        else this.#inFlight.delete(tenant);
      }
      this.#wake();
    });
  }

  get concurrency(): number {
    return this.#slots + 1;
  }

  /** What this worker is running, by tenant (for tests and logs). */
  snapshot(): { running: number; fetching: number; byTenant: Record<string, number> } {
    return { running: this.#running, fetching: this.#fetching, byTenant: Object.fromEntries(this.#inFlight) };
  }

  /** graphile-worker's forbiddenFlags: called by a slot right before it asks for a job. */
  readonly forbiddenFlags = async (): Promise<string[]> => {
    // Deciding for the spare slot needs to know whose jobs the slots still fetching will get.
    while (this.#running + this.#fetching >= this.#slots && this.#fetching > 0) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    const spare = this.#running + this.#fetching >= this.#slots;
    const forbidden: string[] = [];
    for (const [tenant, count] of this.#inFlight) {
      if (spare ? count > 0 : count >= this.#slots) forbidden.push(`${TENANT_FLAG}${tenant}`);
    }
    this.#fetching++;
    return forbidden;
  };

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

/** Who a send is for: its tenant, its endpoint (the subscription) and the job it belongs to. */
export interface SendOwner {
  tenant: string;
  endpoint: string;
  job: string;
}

/**
 * Attempts in flight in this worker, bounded three ways so that sends run concurrently as the I/O they
 * are without one tenant or one endpoint taking everything (docs/architecture.md, fairness between
 * tenants):
 *
 * - at most `perWorker` (WORKER_MAX_SENDS) at once in the worker;
 * - at most `perEndpoint` (WEBHOOK_MAX_SENDS_PER_ENDPOINT) to one endpoint (a subscription) at once;
 * - at most `perWorker` less a spare quarter for one tenant: however many of its sends hang, another
 *   tenant's first attempt finds a place at once.
 *
 * A place that frees goes to the waiting send, among those the bounds allow, whose tenant has the fewest
 * sends under way, then whose job has the fewest, then the one that asked first: every tenant and every
 * job of a tenant keeps making progress, an attempt at a time at least, however many deliveries the
 * others hold (a deliver_webhooks job's lock is renewed as its deliveries end, and a job without
 * progress for 5 minutes is reported stuck).
 */
export class SendLimits {
  readonly perWorker: number;
  readonly perEndpoint: number;
  readonly perTenant: number;
  #sending = 0;
  readonly #byTenant = new Map<string, number>();
  readonly #byEndpoint = new Map<string, number>();
  readonly #byJob = new Map<string, number>();
  #waiting: { owner: SendOwner; start: () => void }[] = [];

  constructor(limits: { perWorker: number; perEndpoint: number }) {
    this.perWorker = Math.max(1, limits.perWorker);
    this.perEndpoint = Math.max(1, limits.perEndpoint);
    this.perTenant = Math.max(
      1,
      this.perWorker - (this.perWorker >= 2 ? Math.max(1, Math.floor(this.perWorker / 4)) : 0),
    );
  }

  /** Runs `send` for `owner` once the bounds leave it a place; the place is held until `send` settles. */
  async run<T>(owner: SendOwner, send: () => Promise<T>): Promise<T> {
    // Every waiting send is held by a bound (each place freed goes to one the bounds allow at once), so a
    // newcomer the bounds allow takes no one's place; otherwise the send that frees a place hands it over.
    if (this.#allows(owner)) this.#take(owner);
    else await new Promise<void>((start) => this.#waiting.push({ owner, start }));
    try {
      return await send();
    } finally {
      this.#leave(owner);
    }
  }

  /** What is sending, by tenant and by endpoint, and how many sends wait (for tests and logs). */
  snapshot(): {
    sending: number;
    waiting: number;
    byTenant: Record<string, number>;
    byEndpoint: Record<string, number>;
  } {
    return {
      sending: this.#sending,
      waiting: this.#waiting.length,
      byTenant: Object.fromEntries(this.#byTenant),
      byEndpoint: Object.fromEntries(this.#byEndpoint),
    };
  }

  #allows(owner: SendOwner): boolean {
    return (
      this.#sending < this.perWorker &&
      (this.#byTenant.get(owner.tenant) ?? 0) < this.perTenant &&
      (this.#byEndpoint.get(owner.endpoint) ?? 0) < this.perEndpoint
    );
  }

  #take(owner: SendOwner): void {
    this.#sending++;
    add(this.#byTenant, owner.tenant, 1);
    add(this.#byEndpoint, owner.endpoint, 1);
    add(this.#byJob, owner.job, 1);
  }

  #leave(owner: SendOwner): void {
    this.#sending--;
    add(this.#byTenant, owner.tenant, -1);
    add(this.#byEndpoint, owner.endpoint, -1);
    add(this.#byJob, owner.job, -1);
    // Every place the bounds now leave goes to a waiting send, best first.
    while (this.#sending < this.perWorker && this.#waiting.length > 0) {
      let best = -1;
      let bestTenant = Infinity;
      let bestJob = Infinity;
      for (let index = 0; index < this.#waiting.length; index++) {
        const waiter = this.#waiting[index] as { owner: SendOwner };
        const tenant = this.#byTenant.get(waiter.owner.tenant) ?? 0;
        if (tenant > bestTenant || tenant >= this.perTenant) continue;
        const job = this.#byJob.get(waiter.owner.job) ?? 0;
        if (tenant === bestTenant && job >= bestJob) continue;
        if ((this.#byEndpoint.get(waiter.owner.endpoint) ?? 0) >= this.perEndpoint) continue;
        best = index;
        bestTenant = tenant;
        bestJob = job;
        if (tenant === 0 && job === 0) break;
      }
      if (best < 0) return;
      const [chosen] = this.#waiting.splice(best, 1);
      if (!chosen) return;
      this.#take(chosen.owner);
      chosen.start();
    }
  }
}

function add(counts: Map<string, number>, key: string, by: number): void {
  const value = (counts.get(key) ?? 0) + by;
  if (value > 0) counts.set(key, value);
  else counts.delete(key);
}
