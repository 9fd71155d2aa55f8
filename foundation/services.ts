// What handlers, the worker and the admin CLI share: built once per process by main.ts (or a test).
import type { Config } from "./config.ts";
import type { Database } from "../db/database.ts";
import type { SecretBox } from "./secrets.ts";
import type { TokenService } from "./auth/tokens.ts";
import type { Logger } from "./logger.ts";
import type { HashGate } from "./auth/passwords.ts";
import type { ReplayMemory } from "./replay-memory.ts";
import type { ListenWakeUps } from "./listen-wake-ups.ts";

/** Where this process is in its life, shared with the handlers (readiness turns 503 once a shutdown starts). */
export interface ProcessState {
  shuttingDown: boolean;
  /**
   * Set by a process that runs the worker: whether its job runner runs. False from the moment graphile-worker
   * shuts it down by itself (a lost database) until it runs again (worker/runner.ts): readiness is 503 then.
   */
  jobRunnerRunning?: boolean;
}

export interface Services {
  config: Config;
  db: Database;
  /** Seals and opens the secrets stored in the database (AES-256-GCM under ENCRYPTION_KEY). */
  secretBox: SecretBox;
  tokens: TokenService;
  /** Checks passwords and client secrets, a bounded number at a time (AUTH_HASH_CONCURRENCY). */
  hashGate: HashGate;
  /** Finished Idempotency-Key responses kept in this process's memory (API_IDEMPOTENCY_MEMORY_MB). */
  replays: ReplayMemory;
  /** The polls of listen sessions waiting in this process, woken by the offers' notifications. */
  listenWakeUps: ListenWakeUps;
  version: string;
  logger: Logger;
  /** Set by the process that serves the API (app/lifecycle.ts); absent in tools and some tests. */
  state?: ProcessState;
}
