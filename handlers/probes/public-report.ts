// What the unauthenticated probes may say: the overall status and each check's status, nothing more
// (the version, heartbeat times, queue ages and latencies help an attacker time and fingerprint the
// service; operators read them from GET /health on the metrics port). Generic over the checks, so a
// check added to health-checks.ts is reduced to its status here without a change.
import type { components } from "../../generated/openapi.ts";
import type { CheckStatus, HealthReport } from "./health-checks.ts";

export type PublicReport = components["schemas"]["HealthResponse"];

/** The checks that say whether this API instance can serve; the worker's are not among them. */
const API_CHECKS = new Set(["database", "migrations"]);

function worst(statuses: CheckStatus[]): CheckStatus {
  if (statuses.includes("unhealthy")) return "unhealthy";
  if (statuses.includes("degraded")) return "degraded";
  return "healthy";
}

/**
 * The report the public probes answer: statuses only. With scope "api" only this instance's own checks
 * count (and are shown). While shutting down the instance is unhealthy, whatever its checks say.
 */
export function publicReport(
  report: HealthReport,
  options: { scope?: "all" | "api"; shuttingDown?: boolean } = {},
): PublicReport {
  const checks: Record<string, { status: CheckStatus }> = {};
  for (const [name, check] of Object.entries(report.checks as Record<string, { status: CheckStatus }>)) {
    if (options.scope === "api" && !API_CHECKS.has(name)) continue;
    checks[name] = { status: check.status };
  }
  const status = options.shuttingDown ? "unhealthy" : worst(Object.values(checks).map((check) => check.status));
  // Every check of the full report is declared in the document; only their detail fields are left out.
  const declared = checks as PublicReport["checks"];
  return options.shuttingDown ? { status, shutting_down: true, checks: declared } : { status, checks: declared };
}
