// Bearer authentication (http/authentication.ts) hands passport-http-bearer a view of the request with its
// headers alone, and its verify step gets the request itself back: no object is made with a request as its
// prototype, which would make every request a prototype in V8, with hidden classes of its own in the old
// generation holding it (docs/performance.md, "No request made a prototype"). Black-box: an express app on
// loopback, with a token service that accepts one token.
import express, { type Request } from "express";
import t, { type Test } from "tap";
import { serveOnLoopback } from "../helpers/loopback.ts";
import { promotedShare } from "../helpers/promotion.ts";
import { serviceModule } from "../helpers/repository-copy.ts";
import { requireBearer } from "../../http/authentication.ts";
import { TokenRejected, type Principal, type TokenService } from "../../server/auth/tokens.ts";

const PRINCIPAL: Principal = {
  subject: "client-1",
  tenantId: "tenant-1",
  roles: ["client_admin"],
  tokenId: undefined,
  expiresAt: undefined,
};

/** Accepts "good" and nothing else ("broken" fails as an unreachable key store would); the rest of the service is not needed here. */
const tokens = {
  verify: async (token: string) => {
    if (token === "broken") throw new Error("the signing keys could not be read");
    if (token !== "good") throw new TokenRejected("unknown token");
    return PRINCIPAL;
  },
} as unknown as TokenService;

interface Seen {
  /** What the verify step was given as the request, per request. */
  verified: unknown[];
  /** The request the app's handler got, per request. */
  handled: Request[];
}

async function serve(t: Test): Promise<{ base: string; seen: Seen }> {
  const seen: Seen = { verified: [], handled: [] };
  const app = express();
  app.use(
    requireBearer(tokens, (req) => {
      seen.verified.push(req);
      return false;
    }),
  );
  app.use((req, res) => {
    seen.handled.push(req);
    res.json({ subject: req.user?.subject ?? null, prototypeIsExpress: Object.getPrototypeOf(req) === app.request });
  });
  app.use((error: { code?: string }, _req: Request, res: express.Response, _next: express.NextFunction) => {
    res.status(401).json({ code: error.code ?? "unknown" });
  });
  return { base: await serveOnLoopback(t, app), seen };
}

t.test("the verify step gets the request itself, and the request keeps express's prototype", async (t) => {
  const { base, seen } = await serve(t);
  for (let index = 0; index < 3; index++) {
    const res = await fetch(`${base}/anything`, { headers: { Authorization: "Bearer good" } });
    t.same(await res.json(), { subject: "client-1", prototypeIsExpress: true });
  }
  t.equal(seen.verified.length, 3, "verified once per request");
  seen.verified.forEach((verified, index) =>
    t.equal(verified, seen.handled[index], `request ${index + 1}: the very request, no object made from it`),
  );
});

t.test("a token in the query is still no token, the header's still is one", async (t) => {
  const { base, seen } = await serve(t);
  const queried = await fetch(`${base}/anything?access_token=good`);
  t.equal(queried.status, 401);
  t.same(await queried.json(), { code: "UNAUTHORIZED" });
  t.equal(seen.verified.length, 0, "nothing to verify: the strategy saw no token");
  const wrong = await fetch(`${base}/anything`, { headers: { Authorization: "Bearer bad" } });
  t.equal(wrong.status, 401);
  t.same(await wrong.json(), { code: "UNAUTHORIZED" });
});

t.test("a malformed header is refused, and a failing token service's error is passed on, not a 401", async (t) => {
  const { base, seen } = await serve(t);
  const malformed = await fetch(`${base}/anything`, { headers: { Authorization: "Bearer good extra" } });
  t.equal(malformed.status, 401);
  t.same(await malformed.json(), { code: "UNAUTHORIZED" });
  t.equal(seen.verified.length, 0, "the strategy refused it before verifying");
  const broken = await fetch(`${base}/anything`, { headers: { Authorization: "Bearer broken" } });
  t.same(await broken.json(), { code: "unknown" }, "the error handler got the token service's own error");
});

// With --max-opt=2 V8 optimises no further than Maglev, as a process runs its first 15 000-odd requests
// (docs/performance.md, "Warm-up"); passport's own middleware then kept each request alive through a
// young-generation collection.
t.test("authenticating keeps no request alive past its end, before V8 optimises the code too", async (t) => {
  const principal = `({ subject: "client-1", tenantId: "tenant-1", roles: ["client_admin"] })`;
  const run = (authenticate: string) =>
    promotedShare({
      nodeArguments: ["--max-opt=2"],
      headers: { Authorization: "Bearer good" },
      handler: `
        ${authenticate}
        const handle = (req, res) => {
          res.locals = Array.from({ length: 100 }, (_, i) => ({ i, text: "record " + i }));
          authenticate(req, res, (error) => setTimeout(() => {
            res.statusCode = error ? 401 : 200;
            res.end(req.user?.subject ?? "");
          }, 1));
        };`,
    });
  const withPassportsOwn = await run(`
    const { Passport } = await import("passport");
    const { Strategy } = await import("passport-http-bearer");
    const passport = new Passport();
    passport.use(new Strategy((token, done) => { Promise.resolve(${principal}).then((p) => done(null, p)); }));
    const authenticate = (req, res, next) =>
      passport.authenticate("bearer", { session: false }, (error, user) => {
        req.user = user;
        next(error);
      })(req, res, next);`);
  t.ok(
    withPassportsOwn > 0.1,
    `passport's own middleware: ${(100 * withPassportsOwn).toFixed(1)} % of the bytes promoted (so this can fail)`,
  );
  const withOurs = await run(`
    const { requireBearer } = await import(${serviceModule("http/authentication.ts")});
    const authenticate = requireBearer({ verify: async () => ${principal} });`);
  t.ok(withOurs < 0.02, `requireBearer: ${(100 * withOurs).toFixed(1)} % promoted`);
});
