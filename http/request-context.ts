// The first step of every request: its id (the caller's X-Request-Id when safe, else a new one), echoed
// on every answer, and the operation it is for with what the document says of it (requestIdOf,
// operationOf, routeOf). The steps before validation act on the operation: load shedding and rate limits,
// authentication, the body limit; express-openapi-validator and openapi-backend match the request again
// for their own work.
import { randomUUID } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import type { OpenAPIV3_1 } from "openapi-types";
import { resolveRef } from "./openapi-document.ts";
import { compileRoutes, type RouteMatch } from "./routes.ts";
import {
  dateTimeParameters,
  declaredParameters,
  integerParameters,
  overrideRules,
  type DeclaredParameter,
  type IntegerParameter,
  type OverrideRules,
} from "./validation.ts";

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;

/** What the document says of an operation that the pipeline acts on. */
export interface ResolvedOperation {
  operationId: string;
  secured: boolean;
  /** Declares the PortalSession scheme: a webhook portal credential is accepted too. */
  portal: boolean;
  /** The health probes (tag health): never shed, rate-limited in a bucket of their own. */
  probe: boolean;
  overrides: OverrideRules;
  /** Checked as text before the schema validator coerces them (integerTextIssues). */
  integerParameters: IntegerParameter[];
  /** Checked to name an instant (dateTimeIssues). */
  dateTimeParameters: DeclaredParameter[];
  /** Every parameter it declares. */
  parameters: DeclaredParameter[];
  /** Whether it declares a request body, and whether that body is required. */
  body: "required" | "optional" | "none";
}

/** Every operation of the document, resolved once when the app is built. */
export function resolveOperations(document: OpenAPIV3_1.Document): Map<string, ResolvedOperation> {
  const globalSecurity = document.security ?? [];
  const resolved = new Map<string, ResolvedOperation>();
  for (const pathItem of Object.values(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = (pathItem as OpenAPIV3_1.PathItemObject)[method];
      if (!operation?.operationId) continue;
      const security = operation.security ?? globalSecurity;
      const parameters = [
        ...((pathItem as OpenAPIV3_1.PathItemObject).parameters ?? []),
        ...(operation.parameters ?? []),
      ];
      const resolve = (value: unknown) => resolveRef(document, value);
      const requestBody = resolve(operation.requestBody) as OpenAPIV3_1.RequestBodyObject | undefined;
      resolved.set(operation.operationId, {
        operationId: operation.operationId,
        secured: security.some((requirement) => Object.keys(requirement).length > 0),
        portal: security.some((requirement) => "PortalSession" in requirement),
        probe: (operation.tags ?? []).includes("health"),
        overrides: overrideRules(operation, resolve),
        integerParameters: integerParameters(parameters, resolve),
        dateTimeParameters: dateTimeParameters(parameters, resolve),
        parameters: declaredParameters(parameters, resolve),
        body: requestBody === undefined ? "none" : requestBody.required === true ? "required" : "optional",
      });
    }
  }
  return resolved;
}

export function requestContext(document: OpenAPIV3_1.Document, operations: Map<string, ResolvedOperation>) {
  const routes = compileRoutes(document);
  return (req: Request, res: Response, next: NextFunction): void => {
    const offered = req.headers["x-request-id"];
    const requestId = typeof offered === "string" && SAFE_REQUEST_ID.test(offered) ? offered : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader("X-Request-Id", requestId);
    const route = routes.match(req.method, req.path);
    if (route) {
      res.locals.route = route;
      res.locals.operation = operations.get(route.operationId);
    }
    next();
  };
}

export function requestIdOf(res: Response): string {
  return String(res.locals.requestId ?? "");
}

export function routeOf(res: Response): RouteMatch | undefined {
  return res.locals.route as RouteMatch | undefined;
}

export function operationOf(res: Response): ResolvedOperation | undefined {
  return res.locals.operation as ResolvedOperation | undefined;
}

/** The health probes are never shed and have a rate-limit bucket of their own. */
export function isProbe(res: Response): boolean {
  return operationOf(res)?.probe === true;
}
