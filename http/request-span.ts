// With tracing on (docs/operating.md, tracing), the request's server span learns what the answer knows:
// its route (the document's path template, also the span's name: `POST /v1/intake/submit`), operationId,
// request id and the caller's tenant. With tracing off this step is not in the pipeline at all.
import type { NextFunction, Request, Response } from "express";
import { requestSpanDescriber } from "../foundation/tracing.ts";
import { operationOf, requestIdOf, routeOf } from "./request-context.ts";

export function requestSpan() {
  return (req: Request, res: Response, next: NextFunction): void => {
    const describe = requestSpanDescriber();
    if (describe) {
      res.once("finish", () =>
        describe(routeOf(res)?.template, {
          "integrator.operation_id": operationOf(res)?.operationId,
          "integrator.request_id": requestIdOf(res),
          "integrator.tenant_id": req.user?.tenantId,
        }),
      );
    }
    next();
  };
}
