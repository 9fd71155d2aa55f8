// Bearer authentication (http/authentication.ts): passport with passport-http-bearer's strategy, shown the
// request without its query and body, so that only the Authorization header carries a token. Black-box: an
// express app on loopback, with a token service that accepts one token.
import express, { type Request } from "express";
import t, { type Test } from "tap";
import { serveOnLoopback } from "../helpers/loopback.ts";
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
  /** The path of the request the verify step asked about, per verified token. */
  verified: string[];
}

async function serve(t: Test): Promise<{ base: string; seen: Seen }> {
  const seen: Seen = { verified: [] };
  const app = express();
  app.use(
    requireBearer(tokens, (req) => {
      seen.verified.push(req.path);
      return false;
    }),
  );
  app.use((req, res) => {
    res.json({ subject: req.user?.subject ?? null });
  });
  app.use((error: { code?: string }, _req: Request, res: express.Response, _next: express.NextFunction) => {
    res.status(401).json({ code: error.code ?? "unknown" });
  });
  return { base: await serveOnLoopback(t, app), seen };
}

t.test("a token in the header is verified once per request, and the request goes on with its principal", async (t) => {
  const { base, seen } = await serve(t);
  for (let index = 0; index < 3; index++) {
    const res = await fetch(`${base}/anything/${index}`, { headers: { Authorization: "Bearer good" } });
    t.same(await res.json(), { subject: "client-1" });
  }
  t.same(
    seen.verified,
    ["/anything/0", "/anything/1", "/anything/2"],
    "the verify step reads the request it verifies for",
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
  // passport-http-bearer refuses a token sent in two places; the query's is none, so the header's counts.
  const both = await fetch(`${base}/anything?access_token=other`, { headers: { Authorization: "Bearer good" } });
  t.equal(both.status, 200);
  t.same(await both.json(), { subject: "client-1" });
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
