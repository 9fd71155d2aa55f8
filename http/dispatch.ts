// openapi-backend routes each request to the handler registered for its operationId, and this is the one
// place a handler's Reply becomes the HTTP answer: its headers, then its body as JSON, as the exact text it
// carries (`rawJson`, an idempotent replay's stored bytes) or none.
import type { NextFunction, Request, Response } from "express";
import { OpenAPIBackend, type Context, type Request as OpenApiRequest } from "openapi-backend";
import { loadDocument } from "./openapi-document.ts";
import type { Services } from "../foundation/services.ts";
import { ApiError } from "./errors.ts";
import type { HandlerTable, OperationId, PathOf, QueryOf, Reply, RequestBody } from "./operations.ts";
import { requestIdOf } from "./request-context.ts";

interface WrittenReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  rawJson?: string;
}

function writeReply(res: Response, reply: WrittenReply): void {
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  if (reply.rawJson !== undefined) res.status(reply.status).type("application/json; charset=utf-8").send(reply.rawJson);
  else if (reply.body === undefined) res.status(reply.status).end();
  else res.status(reply.status).json(reply.body);
}

/**
 * Registers the handler of operation O: openapi-backend calls it with its context and the express request
 * and response that dispatch passes on; it gets the typed Call and its Reply is written to the response.
 * The context's body, path and query parameters are typed as O declares them: express-openapi-validator
 * has checked them against the document.
 */
function register<O extends OperationId>(
  api: OpenAPIBackend,
  operationId: O,
  handler: HandlerTable[O],
  services: Services,
): void {
  type Parsed = Context<RequestBody<O>, PathOf<O>, QueryOf<O>>;
  api.register(operationId, async (context: Parsed, req: Request, res: Response) => {
    // 'close' comes once: after the answer was sent, or when the client went away first.
    const clientGone = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) clientGone.abort();
    });
    const reply: Reply<O> = await handler({
      operationId,
      body: context.request.requestBody,
      query: context.request.query,
      params: context.request.params,
      headers: req.headers,
      principal: req.user,
      requestId: requestIdOf(res),
      clientAddress: req.ip ?? req.socket.remoteAddress ?? "",
      signal: clientGone.signal,
      services,
    });
    writeReply(res, reply);
  });
}

/** openapi-backend with the document's operations, each registered with its handler (501 for one missing). */
export async function operationBackend(handlers: Partial<HandlerTable>, services: Services): Promise<OpenAPIBackend> {
  const api = new OpenAPIBackend({
    definition: loadDocument(),
    // express-openapi-validator (http/request-validation.ts) has validated the request before dispatch.
    validate: false,
    // openapi-backend's check of the document knows OpenAPI 3.0 only: it refuses this 3.1 document, and
    // then routes nothing. quick skips that check (Redocly lints the document: npm run lint:openapi).
    quick: true,
    ignoreTrailingSlashes: false,
  });
  await api.init();
  for (const operationId of Object.keys(handlers) as OperationId[]) {
    const handler = handlers[operationId];
    if (handler) register<OperationId>(api, operationId, handler, services);
  }
  // The validator has answered 404 and 405 and the authentication step 401 before dispatch: these answer
  // the same should a request get here all the same.
  api.register({
    notImplemented: async (context: Context) => {
      throw new ApiError(
        "NOT_IMPLEMENTED",
        `${context.operation.operationId ?? "This operation"} is not implemented yet`,
        { status: 501 },
      );
    },
    notFound: async () => {
      throw new ApiError("NOT_FOUND", "No such route");
    },
    unauthorizedHandler: async () => {
      throw new ApiError("UNAUTHORIZED", "A bearer token is required", {
        headers: { "WWW-Authenticate": 'Bearer realm="integrator-api"' },
      });
    },
  });
  // The document's security schemes are met by the principal the authentication step found: it decides
  // which credentials an operation takes (http/access.ts), and the handler what the principal may do there.
  const authenticated = (_context: Context, req: Request) => req.user !== undefined;
  api.registerSecurityHandler("OAuth2PasswordBearer", authenticated);
  api.registerSecurityHandler("PortalSession", authenticated);
  return api;
}

/** Hands the request to openapi-backend, which runs its operation's handler with the request and response. */
export function dispatch(api: OpenAPIBackend) {
  return (req: Request, res: Response, next: NextFunction): void => {
    // Node leaves out headers that were not sent (no undefined values), and the app's query parser
    // ("simple", node:querystring) gives strings and arrays of strings.
    const request: OpenApiRequest = {
      method: req.method,
      path: req.path,
      headers: req.headers as Record<string, string | string[]>,
      query: req.query as Record<string, string | string[]>,
      body: req.body as unknown,
    };
    api.handleRequest(request, req, res).catch(next);
  };
}
