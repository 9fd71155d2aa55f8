// The request bodies one API process holds at once, bounded. A parsed JSON body takes many times its
// bytes on the V8 heap until its answer is sent, and the heap has a limit (docs/operating.md, "Memory"):
// without a bound, enough large valid bodies at once would exhaust it and stop the process with every
// tenant's requests in it. A request reserves its declared Content-Length (a streamed body, its
// route's limit) before a byte is read and gives it back when its connection is done with it; one that
// would take the total past the budget is shed at once (503 SERVICE_UNAVAILABLE, Retry-After), unless no
// body is held at all, so a body under its route's limit is never refused forever. Bodiless requests
// reserve nothing and pass.
import type { NextFunction, Request, Response } from "express";
import { shed, type ShedLog } from "./load-shedding.ts";
import { recordBodyBytesHeld } from "../foundation/metrics.ts";

/**
 * `budgetBytes` 0 turns the bound off; `limitOf` is the route's body limit, reserved for a streamed body;
 * `shedLog` notes a refusal with the bytes the body would have made.
 */
export function bodyMemory(budgetBytes: number, limitOf: (res: Response) => number, shedLog: ShedLog) {
  let held = 0;
  return (req: Request, res: Response, next: NextFunction): void => {
    if (budgetBytes === 0) return next();
    const declared = req.headers["content-length"];
    const streamed = declared === undefined && req.headers["transfer-encoding"] !== undefined;
    const bytes = streamed ? limitOf(res) : Number(declared ?? 0);
    if (!(bytes > 0)) return next();
    if (held > 0 && held + bytes > budgetBytes)
      return next(shed({ reason: "body_memory", measured: held + bytes, threshold: budgetBytes }, shedLog));
    held += bytes;
    recordBodyBytesHeld(held);
    // 'close' comes once, whether the answer was sent or the client went away first.
    res.once("close", () => {
      held -= bytes;
      recordBodyBytesHeld(held);
    });
    next();
  };
}
