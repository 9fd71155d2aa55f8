// Wake-ups for paced deliveries (a subscription's rate_limit_per_second, db/functions/pace_delivery.sql).
// A delivery held back by its subscription's rate limit is not waited for inside a job: its job is moved to
// its slot (graphile-worker's run_at) and the running job returns at once. graphile-worker finds jobs that
// become due later only when a slot next polls (every pollInterval, 1 s by default), which would send a
// limited endpoint's deliveries in bunches, a poll apart; so the worker that moved a job also nudges its
// pool (WorkerPool.nudge, "look for jobs right now") when the job falls due. Another worker's poll finds it
// all the same should this one be busy or gone. Timers are shared per 5 ms and never keep the process up.
import type { WorkerEvents, WorkerPool } from "graphile-worker";

/** Timers closer than this share one. */
const GRAIN_MS = 5;
/** After the slot, so that PostgreSQL's now() has reached the job's run_at when the slot fetches. */
const MARGIN_MS = 3;

export class WakeUps {
  readonly #pools = new Set<WorkerPool>();
  /** Nudges due at a time (ms since the epoch, on the grain): the timer and how many slots to wake. */
  readonly #due = new Map<number, { timer: NodeJS.Timeout; count: number }>();

  /** Follows the pools graphile-worker creates and shuts down with these events. */
  attach(events: WorkerEvents): void {
    events.on("pool:create", ({ workerPool }) => this.#pools.add(workerPool));
    events.on("pool:gracefulShutdown", ({ workerPool }) => this.#pools.delete(workerPool));
    events.on("pool:release", ({ workerPool }) => this.#pools.delete(workerPool));
  }

  /** Nudges a slot of every pool followed, `ms` milliseconds from now (a moved job falls due then). */
  after(ms: number): void {
    const at = Math.ceil((Date.now() + ms + MARGIN_MS) / GRAIN_MS) * GRAIN_MS;
    const due = this.#due.get(at);
    if (due) {
      due.count++;
      return;
    }
    const timer = setTimeout(() => this.#fire(at), Math.max(0, at - Date.now()));
    timer.unref();
    this.#due.set(at, { timer, count: 1 });
  }

  /** Wake-ups waiting (for tests). */
  get pending(): number {
    return this.#due.size;
  }

  stop(): void {
    for (const { timer } of this.#due.values()) clearTimeout(timer);
    this.#due.clear();
    this.#pools.clear();
  }

  #fire(at: number): void {
    const count = this.#due.get(at)?.count ?? 1;
    this.#due.delete(at);
    for (const pool of this.#pools) {
      try {
        pool.nudge(count);
      } catch {
        // A pool shutting down: its own poll, or another worker's, takes the job.
      }
    }
  }
}
