// The request's steps run in one router layer (http/pipeline.ts): in order, each at most once, and any
// error, passed to next(), thrown or a rejected promise, goes past the remaining steps to express's error
// handling, as it does between express's own layers. Black-box: an express app on loopback.
import express from "express";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import t, { type Test } from "tap";
import { serveOnLoopback } from "../helpers/loopback.ts";
import { pipeline } from "../../http/pipeline.ts";

async function serve(t: Test, steps: Parameters<typeof pipeline>[0]): Promise<string> {
  const app = express();
  app.use(pipeline(steps));
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).json({ caught: error instanceof Error ? error.message : String(error) });
  });
  return serveOnLoopback(t, app);
}

/** A step that notes its name in a header of the answer and passes on. */
const noting =
  (name: string): RequestHandler =>
  (req, res, next) => {
    res.append("X-Steps", name);
    next();
  };

const answering: RequestHandler = (_req, res) => {
  res.json({ answered: true });
};

t.test("steps run in order, nested lists flattened, until one answers", async (t) => {
  const base = await serve(t, [noting("a"), [noting("b"), noting("c")], [], answering, noting("never")]);
  const res = await fetch(`${base}/anything`);
  t.equal(res.status, 200);
  t.equal(res.headers.get("x-steps"), "a, b, c", "each step once, in order; none after the answer");
  t.same(await res.json(), { answered: true });
});

t.test("after the last step the router goes on: express answers 404", async (t) => {
  const base = await serve(t, [noting("a"), noting("b")]);
  const res = await fetch(`${base}/anything`);
  t.equal(res.status, 404);
  t.equal(res.headers.get("x-steps"), "a, b");
  await res.arrayBuffer();
});

const failures: [string, RequestHandler, string][] = [
  ["passed to next()", (_req, _res, next) => next(new Error("passed")), "passed"],
  [
    "thrown",
    () => {
      throw new Error("thrown");
    },
    "thrown",
  ],
  ["a rejected promise", async () => Promise.reject(new Error("rejected")), "rejected"],
  [
    "a promise rejected without a reason",
    // The case express's own layers turn into an Error of their own.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
    async () => Promise.reject(undefined),
    "Rejected promise",
  ],
];

for (const [how, failing, message] of failures) {
  t.test(`an error ${how} skips the remaining steps and reaches the error handler`, async (t) => {
    const base = await serve(t, [noting("before"), failing, noting("after"), answering]);
    const res = await fetch(`${base}/x`);
    t.equal(res.status, 500);
    t.equal(res.headers.get("x-steps"), "before", "no step after the failing one ran");
    t.same(await res.json(), { caught: message });
  });
}

t.test('next("route") goes on at this level; next("router") leaves the router', async (t) => {
  const base = await serve(t, [
    (req, _res, next) => next(req.path === "/leave" ? "router" : "route"),
    noting("after"),
    answering,
  ]);
  const on = await fetch(`${base}/stay`);
  t.equal(on.status, 200);
  t.equal(on.headers.get("x-steps"), "after");
  await on.arrayBuffer();
  const left = await fetch(`${base}/leave`);
  t.equal(left.status, 404, "the router's remaining layers are skipped");
  t.equal(left.headers.get("x-steps"), null);
  await left.arrayBuffer();
});

t.test("a router among the steps answers its own paths and passes the rest on", async (t) => {
  const pages = express.Router();
  pages.get("/page", (_req, res) => {
    res.type("text/plain").send("the page");
  });
  const base = await serve(t, [noting("a"), pages, noting("b"), answering]);
  const page = await fetch(`${base}/page`);
  t.equal(await page.text(), "the page");
  t.equal(page.headers.get("x-steps"), "a");
  const other = await fetch(`${base}/other`);
  t.equal(other.headers.get("x-steps"), "a, b");
  t.same(await other.json(), { answered: true });
});
