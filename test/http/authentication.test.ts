// Bearer authentication (http/authentication.ts): passport with passport-http-bearer's strategy, shown the
// request's headers alone, so that only the Authorization header carries a token; a portal credential only
// where the operation takes one. Black-box: an express app on loopback, with a token service that accepts
// one access token and one portal credential.
import express, { type Request } from "express";
import t, { type Test } from "tap";
import { serveOnLoopback } from "../helpers/loopback.ts";
import { requireBearer } from "../../http/authentication.ts";
import { TokenRejected, type Principal, type TokenService } from "../../foundation/auth/tokens.ts";

const PRINCIPAL: Principal = {
  subject: "client-1",
  tenantId: "tenant-1",
  roles: ["client_admin"],
  tokenId: undefined,
  expiresAt: undefined,
};

const PORTAL: Principal = { ...PRINCIPAL, subject: "portal:client-1", roles: [], portal: true };

interface Seen {
  /** The tokens the token service was asked to verify. */
  verified: string[];
}

/**
 * Accepts "good" and the portal credential "portal" and nothing else ("broken" fails as an unreachable key
 * store would); the rest of the service is not needed here.
 */
function tokenService(seen: Seen): Pick<TokenService, "verify"> {
  return {
    verify: async (token: string) => {
      seen.verified.push(token);
      if (token === "broken") throw new Error("the signing keys could not be read");
      if (token === "portal") return PORTAL;
      if (token !== "good") throw new TokenRejected("unknown token");
      return PRINCIPAL;
    },
  };
}

/** Requests under /portal/ are for an operation that takes a portal credential. */
async function serve(t: Test): Promise<{ base: string; seen: Seen }> {
  const seen: Seen = { verified: [] };
  const app = express();
  app.use(requireBearer(tokenService(seen), (req) => req.path.startsWith("/portal/")));
  app.use((req, res) => {
    res.json({ subject: req.user?.subject ?? null });
  });
  app.use(
    (
      error: { code?: string; headers?: Record<string, string> },
      _req: Request,
      res: express.Response,
      _next: express.NextFunction,
    ) => {
      res.status(401).json({ code: error.code ?? "unknown", challenge: error.headers?.["WWW-Authenticate"] });
    },
  );
  return { base: await serveOnLoopback(t, app), seen };
}

t.test("a token in the header is verified once per request, and the request goes on with its principal", async (t) => {
  const { base, seen } = await serve(t);
  for (let index = 0; index < 3; index++) {
    const res = await fetch(`${base}/anything/${index}`, { headers: { Authorization: "Bearer good" } });
    t.same(await res.json(), { subject: "client-1" });
  }
  t.same(seen.verified, ["good", "good", "good"]);
});

t.test("a token in the query is still no token, the header's still is one", async (t) => {
  const { base, seen } = await serve(t);
  const queried = await fetch(`${base}/anything?access_token=good`);
  t.equal(queried.status, 401);
  t.same(await queried.json(), { code: "UNAUTHORIZED", challenge: 'Bearer realm="integrator-api"' });
  t.equal(seen.verified.length, 0, "nothing to verify: the strategy saw no token");
  const wrong = await fetch(`${base}/anything`, { headers: { Authorization: "Bearer bad" } });
  t.equal(wrong.status, 401);
  t.same(await wrong.json(), {
    code: "UNAUTHORIZED",
    challenge: 'Bearer realm="integrator-api", error="invalid_token"',
  });
  // passport-http-bearer refuses a token sent in two places; the query's is none, so the header's counts.
  const both = await fetch(`${base}/anything?access_token=other`, { headers: { Authorization: "Bearer good" } });
  t.equal(both.status, 200);
  t.same(await both.json(), { subject: "client-1" });
});

t.test("a malformed header is refused, and a failing token service's error is passed on, not a 401", async (t) => {
  const { base, seen } = await serve(t);
  const malformed = await fetch(`${base}/anything`, { headers: { Authorization: "Bearer good extra" } });
  t.equal(malformed.status, 401);
  t.match(await malformed.json(), { code: "UNAUTHORIZED" });
  t.equal(seen.verified.length, 0, "the strategy refused it before verifying");
  const broken = await fetch(`${base}/anything`, { headers: { Authorization: "Bearer broken" } });
  t.same(await broken.json(), { code: "unknown" }, "the error handler got the token service's own error");
});

t.test("a portal credential where the operation takes one, and as an invalid token elsewhere", async (t) => {
  const { base } = await serve(t);
  const portal = await fetch(`${base}/portal/subscriptions`, { headers: { Authorization: "Bearer portal" } });
  t.same(await portal.json(), { subject: "portal:client-1" });
  const elsewhere = await fetch(`${base}/anything`, { headers: { Authorization: "Bearer portal" } });
  t.equal(elsewhere.status, 401);
  t.same(await elsewhere.json(), {
    code: "UNAUTHORIZED",
    challenge: 'Bearer realm="integrator-api", error="invalid_token"',
  });
});
