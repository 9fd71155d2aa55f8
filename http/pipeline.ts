// The request's steps (http/app.ts) run one after another inside one layer of express's router. The
// router matches its path against every layer it passes and gives each a match record, a parameter step
// and a closure of its own: about a seventh of what a submit allocated, for steps that all take every path.
// Here a step's next() calls the following step at once; an error, thrown or passed or a rejected
// promise, leaves at once to the router and from there to the error handler, as express's own layers do.
import type { NextFunction, Request, RequestHandler, Response } from "express";

export function pipeline(steps: readonly (RequestHandler | readonly RequestHandler[])[]): RequestHandler {
  const flat: readonly RequestHandler[] = steps.flat();
  // Named for the one express middleware span that tracing shows for the steps.
  return function requestPipeline(req: Request, res: Response, done: NextFunction): void {
    let index = 0;
    const next = (error?: unknown): void => {
      // As express's router: "route" skips nothing at this level, "router" leaves the router.
      if (error === "router") return done();
      if (error && error !== "route") return done(error);
      const step = flat[index++];
      if (step === undefined) return done();
      try {
        const result = step(req, res, next);
        if (result instanceof Promise)
          result.then(undefined, (rejected: unknown) => next(rejected || new Error("Rejected promise")));
      } catch (thrown) {
        next(thrown);
      }
    };
    next();
  };
}
