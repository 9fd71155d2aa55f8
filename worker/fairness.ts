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

/**
 * At most `limit` of one tenant's deliveries sending at once in this worker, across the deliver_webhooks
 * jobs (an event's deliveries in one job) that hold its slots: a tenant's share is WORKER_CONCURRENCY
 * sends, as when every delivery was a job of its own. A place that frees goes to the waiting job with the
 * fewest sends of its own under way (then the one that asked first), so every job of a tenant keeps
 * making progress, an attempt at a time at least, however many deliveries the others hold: a job's
 * lock is renewed as its deliveries end, and a job without progress for 5 minutes is reported stuck.
 */
export class TenantSends {
  readonly #limit: number;
  readonly #sending = new Map<string, number>();
  /** Sends under way by job (the owner). */
  readonly #byOwner = new Map<string, number>();
  readonly #waiting = new Map<string, { owner: string; start: () => void }[]>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Runs `send` for `owner` (a job) of `tenant` once a place is free. */
  async run<T>(tenant: string, owner: string, send: () => Promise<T>): Promise<T> {
    if ((this.#sending.get(tenant) ?? 0) >= this.#limit) {
      // The send that ends hands its place over (the tenant's count stays), so no newcomer overtakes.
      await new Promise<void>((start) => {
        const queue = this.#waiting.get(tenant) ?? [];
        queue.push({ owner, start });
        this.#waiting.set(tenant, queue);
      });
    } else {
      this.#sending.set(tenant, (this.#sending.get(tenant) ?? 0) + 1);
      this.#countFor(owner);
    }
    try {
      return await send();
    } finally {
      const own = (this.#byOwner.get(owner) ?? 1) - 1;
      if (own > 0) this.#byOwner.set(owner, own);
      else this.#byOwner.delete(owner);
      this.#leave(tenant);
    }
  }

  /** What is sending, by tenant (for tests). */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.#sending);
  }

  #countFor(owner: string): void {
    this.#byOwner.set(owner, (this.#byOwner.get(owner) ?? 0) + 1);
  }

  #leave(tenant: string): void {
    const queue = this.#waiting.get(tenant) ?? [];
    if (queue.length > 0) {
      let next = 0;
      queue.forEach((waiter, index) => {
        const candidate = queue[next];
        if (candidate && (this.#byOwner.get(waiter.owner) ?? 0) < (this.#byOwner.get(candidate.owner) ?? 0))
          next = index;
      });
      const [chosen] = queue.splice(next, 1);
      if (queue.length === 0) this.#waiting.delete(tenant);
      if (chosen) {
        this.#countFor(chosen.owner);
        chosen.start();
      }
      return;
    }
    const left = (this.#sending.get(tenant) ?? 1) - 1;
    if (left > 0) this.#sending.set(tenant, left);
    else this.#sending.delete(tenant);
  }
}
