// knex prints its warnings (every failed connection acquire, with a stack) to stdout as plain text, which
// breaks the JSON-lines promise and floods the log while the database is away. This routes them through
// the logger as JSON lines (component "database"), the stack in a field of its own, and lets the same
// message through at most once per interval with a count of the ones held back.
import type { DatabaseLog } from "../db/database.ts";
import type { Logger } from "./logger.ts";

const REPEAT_INTERVAL_MS = 5000;

export function databaseLog(logger: Logger, intervalMs = REPEAT_INTERVAL_MS): DatabaseLog {
  const log = logger.child({ component: "database" });
  const recent = new Map<string, { at: number; suppressed: number }>();
  return (level, text) => {
    const [first = "", ...rest] = text.split("\n");
    // "Acquire connection error: Error: connect ECONNREFUSED 127.0.0.1:5432" and its stack below.
    const message = first.trim();
    const now = Date.now();
    const seen = recent.get(message);
    if (seen && now - seen.at < intervalMs) {
      seen.suppressed++;
      return;
    }
    recent.set(message, { at: now, suppressed: 0 });
    if (recent.size > 100) recent.delete(recent.keys().next().value as string);
    const fields: Record<string, unknown> = {};
    if (seen?.suppressed) fields.repeated = seen.suppressed;
    const stack = rest.map((line) => line.trim()).filter((line) => line.length > 0);
    if (stack.length > 0) fields.stack = stack.join("\n");
    log[level](fields, message);
  };
}
