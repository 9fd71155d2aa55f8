// A write the worker must not lose waits for the database when it is away (a restart, a failover) instead
// of failing. The record of an attempt already sent is one: if it failed, its job would be run again once
// the database is back and the receiver would get the delivery a second time. The wait ends when the
// write succeeds, when it fails for another reason, or when the worker stops (`stopping`).
import { setTimeout as pause } from "node:timers/promises";
import { isDatabaseUnavailable } from "../db/database.ts";

/** Waits between tries: doubling from the first up to the last, so a return is noticed within a second. */
const FIRST_WAIT_MS = 100;
const LONGEST_WAIT_MS = 1000;

export async function whileDatabaseAway<T>(
  write: () => Promise<T>,
  options: { stopping?: AbortSignal; onWait?: (error: unknown) => void } = {},
): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await write();
    } catch (error) {
      if (!isDatabaseUnavailable(error) || options.stopping?.aborted === true) throw error;
      if (tries === 1) options.onWait?.(error);
      const waitMs = Math.min(LONGEST_WAIT_MS, FIRST_WAIT_MS * 2 ** (tries - 1));
      try {
        await pause(waitMs, undefined, options.stopping ? { signal: options.stopping } : {});
      } catch {
        throw error;
      }
    }
  }
}
