// Dispatch (http/dispatch.ts): openapi-backend routes each request to the handler registered for its
// operationId, which gets the typed Call (path parameters decoded, the principal, the request id) and whose
// Reply becomes the answer; a protected operation without a principal is answered 401, one without a
// handler 501, a path of no operation 404. Black-box: express with dispatch alone on loopback (no
// authentication or validation step before it), with a principal set by the test.
import express, { type NextFunction, type Request, type Response } from "express";
import t, { type Test } from "tap";
import { serveOnLoopback } from "../helpers/loopback.ts";
import { dispatch, operationBackend } from "../../http/dispatch.ts";
import { ApiError, sendApiError } from "../../http/errors.ts";
import type { Call, HandlerTable } from "../../http/operations.ts";
import type { Principal } from "../../foundation/auth/tokens.ts";
import type { Services } from "../../foundation/services.ts";

const PRINCIPAL: Principal = {
  subject: "client-1",
  tenantId: "tenant-1",
  roles: ["client_admin"],
  tokenId: undefined,
  expiresAt: undefined,
};

/** The handlers read nothing of the services here. */
const services = {} as Services;

async function serve(t: Test, handlers: Partial<HandlerTable>, principal?: Principal): Promise<string> {
  const app = express();
  app.use((req: Request, res: Response, next: NextFunction) => {
    res.locals.requestId = "request-1";
    req.user = principal;
    next();
  });
  app.use(dispatch(await operationBackend(handlers, services)));
  app.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (error instanceof ApiError) sendApiError(res, error);
    else next(error);
  });
  return serveOnLoopback(t, app);
}

t.test("the operation's handler gets the typed call and its reply is the answer", async (t) => {
  const calls: Call<"getWebhookSubscription">[] = [];
  const base = await serve(
    t,
    {
      getWebhookSubscription: async (call) => {
        calls.push(call);
        return { status: 200, body: { id: call.params.subscription_id } as never, headers: { "X-Seen": "yes" } };
      },
    },
    PRINCIPAL,
  );
  const res = await fetch(`${base}/v1/webhooks/subscriptions/a%20b`);
  t.equal(res.status, 200);
  t.equal(res.headers.get("x-seen"), "yes");
  t.same(await res.json(), { id: "a b" });
  t.equal(calls.length, 1);
  t.match(calls[0], {
    operationId: "getWebhookSubscription",
    params: { subscription_id: "a b" },
    principal: PRINCIPAL,
    requestId: "request-1",
  });
});

t.test("a protected operation without a principal is answered 401, whatever its handler", async (t) => {
  let called = false;
  const base = await serve(t, {
    getCurrentPrincipal: async () => {
      called = true;
      return { status: 200, body: {} as never };
    },
  });
  const res = await fetch(`${base}/v1/me`);
  t.equal(res.status, 401);
  t.equal(res.headers.get("www-authenticate"), 'Bearer realm="integrator-api"');
  t.match(await res.json(), { error: { code: "UNAUTHORIZED" } });
  t.notOk(called, "the handler never ran");
});

t.test("an open operation runs without a principal; one without a handler is 501, no operation 404", async (t) => {
  const base = await serve(t, { getHealth: async () => ({ status: 200, body: { status: "ok" } as never }) });
  t.equal((await fetch(`${base}/v1/health`)).status, 200);
  const missing = await fetch(`${base}/.well-known/jwks.json`);
  t.equal(missing.status, 501);
  t.match(await missing.json(), { error: { code: "NOT_IMPLEMENTED", message: /getJwks/ } });
  const nowhere = await fetch(`${base}/v1/nothing-here`);
  t.equal(nowhere.status, 404);
  t.match(await nowhere.json(), { error: { code: "NOT_FOUND" } });
});

t.test("any principal the authentication step let through meets the operation's schemes", async (t) => {
  // refreshWebhookPortalSession declares PortalSession alone; its handler, not dispatch, refuses an access token.
  const base = await serve(
    t,
    { refreshWebhookPortalSession: async () => ({ status: 201, body: {} as never }) },
    PRINCIPAL,
  );
  t.equal((await fetch(`${base}/v1/webhooks/portal-sessions/refresh`, { method: "POST" })).status, 201);
});
