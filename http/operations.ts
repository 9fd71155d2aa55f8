// Types that tie handlers to the generated contract: a handler for operation O reads O's declared
// input and can only return a status and body that O declares.
import type { IncomingHttpHeaders } from "node:http";
import type { operations } from "../generated/openapi.ts";
import type { Principal } from "../foundation/auth/tokens.ts";
import type { Services } from "../foundation/services.ts";

/** Operations the service serves: the document's path operations (webhook operations' ids start with `webhook`). */
export type OperationId = Exclude<keyof operations, `webhook${string}`>;

type JsonContent<T> = T extends { content: infer C }
  ? C extends { "application/json": infer B }
    ? B
    : C extends { "application/x-www-form-urlencoded": infer F }
      ? F
      : never
  : undefined;

/** The declared body; `| undefined` when the body is optional (`requestBody.required: false`). */
export type RequestBody<O extends OperationId> = operations[O] extends { requestBody: infer R }
  ? JsonContent<R>
  : operations[O] extends { requestBody?: infer R }
    ? [NonNullable<R>] extends [never]
      ? never
      : JsonContent<NonNullable<R>> | undefined
    : undefined;
export type QueryOf<O extends OperationId> = operations[O]["parameters"] extends { query?: infer Q }
  ? NonNullable<Q>
  : Record<string, never>;
export type PathOf<O extends OperationId> = operations[O]["parameters"] extends { path?: infer P }
  ? NonNullable<P>
  : Record<string, never>;

type Responses<O extends OperationId> = operations[O]["responses"];
/** Any status the operation declares; coded errors are normally thrown as ApiError instead. */
type SuccessStatus<O extends OperationId> = Extract<keyof Responses<O>, number>;

export type Reply<O extends OperationId> = {
  [S in SuccessStatus<O>]: {
    status: S;
    body: JsonContent<Responses<O>[S]>;
    headers?: Record<string, string>;
    /** JSON text to send instead of serialising `body` (it must be `body`'s JSON): an idempotent replay's exact bytes. */
    rawJson?: string;
  };
}[SuccessStatus<O>];

export interface Call<O extends OperationId> {
  operationId: O;
  body: RequestBody<O>;
  query: QueryOf<O>;
  params: PathOf<O>;
  headers: IncomingHttpHeaders;
  /** Set on every protected operation (the auth middleware has already answered 401/403 otherwise). */
  principal: Principal | undefined;
  requestId: string;
  /** The client's address: the socket's peer, or from X-Forwarded-For when TRUST_PROXY trusts the proxy. */
  clientAddress: string;
  /** Aborts when the client goes away before the answer is sent (a long poll stops waiting then). */
  signal: AbortSignal;
  services: Services;
}

export type OperationHandler<O extends OperationId> = (call: Call<O>) => Promise<Reply<O>>;

/** Every operation of the document, each with its handler: a missing one fails the typecheck. */
export type HandlerTable = { [O in OperationId]: OperationHandler<O> };

/** The authenticated principal of a protected operation. */
export function principalOf(call: { principal: Principal | undefined }): Principal {
  if (!call.principal) throw new Error("principalOf called on an operation without authentication");
  return call.principal;
}
