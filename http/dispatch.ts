// Dispatch by the request's one route match to the handler openapi-backend holds for its operationId,
// and the one place a handler's Reply becomes the HTTP answer: its headers, then its body as JSON, as the
// exact text it carries (`rawJson`, an idempotent replay's stored bytes) or none.
import type { NextFunction, Request, Response } from "express";
import { OpenAPIBackend, type Context } from "openapi-backend";
import type { OpenAPIV3_1 } from "openapi-types";
import type { Services } from "../server/services.ts";
import { ApiError } from "./errors.ts";
import type { Call, HandlerTable, OperationId } from "./operations.ts";
import { operationOf, requestIdOf, routeOf } from "./request-context.ts";
import type { RouteMatch } from "./routes.ts";

interface WrittenReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  rawJson?: string;
}

type BoundHandler = (context: Context, req: Request, res: Response) => Promise<void>;

/** A handler of the table, called with the typed Call and its Reply written to the response. */
function bind(operationId: string, handler: unknown, services: Services): BoundHandler {
  const run = handler as (call: Call<OperationId>) => Promise<WrittenReply>;
  return async (context, req, res) => {
    const reply = await run({
      operationId: operationId as OperationId,
      body: req.body as never,
      query: req.query,
      params: (context.request.params ?? {}) as never,
      headers: req.headers,
      principal: req.user,
      requestId: requestIdOf(res),
      clientAddress: req.ip ?? req.socket.remoteAddress ?? "",
      services,
    });
    writeReply(res, reply);
  };
}

function writeReply(res: Response, reply: WrittenReply): void {
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  if (reply.rawJson !== undefined) res.status(reply.status).type("application/json; charset=utf-8").send(reply.rawJson);
  else if (reply.body === undefined) res.status(reply.status).end();
  else res.status(reply.status).json(reply.body);
}

/** openapi-backend's table of the document's operations, each bound to its handler (501 for one missing). */
export async function handlerTable(
  document: OpenAPIV3_1.Document,
  handlers: Partial<HandlerTable>,
  services: Services,
): Promise<OpenAPIBackend> {
  const backend = new OpenAPIBackend({
    definition: document as never,
    validate: false,
    quick: true,
    ignoreTrailingSlashes: false,
  });
  const bound: Record<string, BoundHandler> = {};
  for (const [operationId, handler] of Object.entries(handlers))
    bound[operationId] = bind(operationId, handler, services);
  backend.register({
    ...bound,
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
  await backend.init();
  return backend;
}

/**
 * Runs the matched operation's handler (handleRequest would match the route again). The validator has
 * answered 404/405 for anything unmatched; a protected operation never runs without a principal.
 */
export function dispatch(backend: OpenAPIBackend) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const route = routeOf(res);
    const operation = operationOf(res);
    const run = async (): Promise<void> => {
      if (!route || !operation) throw new ApiError("NOT_FOUND", "No such route");
      if (operation.secured && !req.user) {
        await backend.handlers.unauthorizedHandler?.(contextOf(route), req, res);
        return;
      }
      const handler = backend.handlers[route.operationId] ?? backend.handlers.notImplemented;
      await handler?.(contextOf(route), req, res);
    };
    run().catch(next);
  };
}

/** What a handler of the table reads of openapi-backend's context: the operation and the path parameters. */
function contextOf(route: RouteMatch): Context {
  return {
    operation: { operationId: route.operationId },
    request: { params: route.params },
  } as unknown as Context;
}
