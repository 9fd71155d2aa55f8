// Probes: the legacy health check always answers 200; readiness answers 503 unless everything (or, with
// scope=api, this API instance) is healthy, and from the start of a shutdown. Both say statuses only.
import { checkHealth } from "./health-checks.ts";
import { publicReport } from "./public-report.ts";
import type { OperationHandler } from "../../http/operations.ts";

const NO_STORE = { "Cache-Control": "no-store" };

export const getHealth: OperationHandler<"getHealth"> = async ({ services }) => ({
  status: 200,
  body: publicReport(await checkHealth(services), { shuttingDown: services.state?.shuttingDown === true }),
  headers: NO_STORE,
});

export const getReadiness: OperationHandler<"getReadiness"> = async ({ services, query }) => {
  const report = publicReport(await checkHealth(services), {
    scope: query.scope === "api" ? "api" : "all",
    shuttingDown: services.state?.shuttingDown === true,
  });
  return report.status === "healthy"
    ? { status: 200, body: report, headers: NO_STORE }
    : { status: 503, body: report, headers: NO_STORE };
};
