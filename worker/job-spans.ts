// With tracing on (docs/operating.md, tracing), every job runs inside a span of its own (`process
// deliver_webhook`, kind consumer): the child of the span whose trace context the job's payload carries
// (the statement that queued it, in the API or a previous attempt), else the root of a new trace.
import type { Task } from "graphile-worker";
import type { JobName } from "../db/jobs.ts";
import { carriedTraceContext, inSpan } from "../foundation/tracing.ts";

export function traced<N extends JobName>(name: N, task: Task<N>): Task<N> {
  return (payload, helpers) => {
    const { tenant_id, delivery_id, delivery_ids } = (payload ?? {}) as Record<string, unknown>;
    return inSpan(
      `process ${name}`,
      {
        kind: "consumer",
        parent: carriedTraceContext(payload),
        attributes: {
          "messaging.system": "graphile_worker",
          "messaging.operation.type": "process",
          "messaging.destination.name": name,
          "messaging.message.id": String(helpers.job.id),
          "integrator.job_attempt": helpers.job.attempts,
          "integrator.tenant_id": typeof tenant_id === "string" ? tenant_id : undefined,
          "integrator.delivery_id": typeof delivery_id === "string" ? delivery_id : undefined,
          "integrator.delivery_count": Array.isArray(delivery_ids) ? delivery_ids.length : undefined,
        },
      },
      async () => task(payload, helpers),
    );
  };
}
