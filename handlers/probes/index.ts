// Probes: the legacy health check always answers 200; readiness answers 503 unless everything is healthy.
import { checkHealth } from "./health-checks.ts";
import type { OperationHandler } from "../../server/http/operations.ts";

const NO_STORE = { "Cache-Control": "no-store" };

export const getHealth: OperationHandler<"getHealth"> = async ({ services }) => ({
  status: 200,
  body: await checkHealth(services),
  headers: NO_STORE,
});

export const getReadiness: OperationHandler<"getReadiness"> = async ({ services }) => {
  const report = await checkHealth(services);
  return report.status === "healthy"
    ? { status: 200, body: report, headers: NO_STORE }
    : { status: 503, body: report, headers: NO_STORE };
};
