// The coarse class of a failed attempt, the only failure detail tenants see in an attempt's history
// (the sender's full message stays in the delivery's error_message and the logs).
import type { AttemptErrorClass } from "../db/webhooks.ts";
import type { SendOutcome } from "./sender.ts";

export function errorClassOf(outcome: SendOutcome): AttemptErrorClass | null {
  if (outcome.delivered) return null;
  if (outcome.responseCode !== null) return "http_status";
  if (/timed out|timeout/i.test(outcome.errorMessage)) return "timeout";
  if (/\bTLS\b|SSL|certificate|CERT_/i.test(outcome.errorMessage)) return "tls_failed";
  return "connection_failed";
}
