// Which operations of the document the test suite exercised. When `npm test` runs the whole suite,
// scripts/test.ts gives every test process a directory in INTEGRATOR_TEST_OPERATIONS_DIR; each test
// server (test/helpers/server.ts) appends the operationId and status of every answer it serves to a file
// of its process there, once per pair; after the run, an operation of the document that never answered
// with a 2xx status fails the run, named.
import fs from "node:fs";
import type http from "node:http";
import path from "node:path";
import type { Response } from "express";
import { operationOf } from "../http/request-context.ts";
import { operationsOf, type DocumentNode } from "./openapi-source.ts";

export const OPERATIONS_DIR_ENV = "INTEGRATOR_TEST_OPERATIONS_DIR";

/** Records what `server` answers, by operationId and status, when the run asks for it (else nothing). */
export function recordServedOperations(server: http.Server, directory = process.env[OPERATIONS_DIR_ENV]): void {
  if (!directory) return;
  const file = path.join(directory, `${process.pid}.txt`);
  const seen = new Set<string>();
  server.on("request", (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.once("finish", () => {
      const operationId = operationOf(res as Response)?.operationId;
      if (!operationId) return;
      const line = `${operationId} ${res.statusCode}`;
      if (seen.has(line)) return;
      seen.add(line);
      fs.appendFileSync(file, `${line}\n`);
    });
  });
}

/** The statuses each operation answered with, from every file in `directory`. */
export function servedOperations(directory: string): Map<string, Set<number>> {
  const served = new Map<string, Set<number>>();
  for (const name of fs.existsSync(directory) ? fs.readdirSync(directory) : [])
    for (const line of fs.readFileSync(path.join(directory, name), "utf8").split("\n")) {
      const [operationId, status] = line.split(" ");
      if (!operationId || !status) continue;
      served.set(operationId, (served.get(operationId) ?? new Set()).add(Number(status)));
    }
  return served;
}

/** The document's path operations that never answered with a 2xx, with the statuses they did answer with. */
export function unexercisedOperations(
  document: DocumentNode,
  served: Map<string, Set<number>>,
): { operationId: string; statuses: number[] }[] {
  return operationsOf(document)
    .filter((entry) => !entry.webhook && entry.operationId !== undefined)
    .map((entry) => ({
      operationId: entry.operationId ?? "",
      statuses: [...(served.get(entry.operationId ?? "") ?? [])],
    }))
    .filter(({ statuses }) => !statuses.some((status) => status >= 200 && status < 300))
    .map(({ operationId, statuses }) => ({ operationId, statuses: statuses.sort((a, b) => a - b) }));
}

/** The report's lines: empty when every operation was exercised. */
export function coverageReport(document: DocumentNode, directory: string): string[] {
  const missing = unexercisedOperations(document, servedOperations(directory));
  if (missing.length === 0) return [];
  return [
    `${missing.length} operation(s) of the document never answered 2xx in the suite (every operation needs a test that exercises it):`,
    ...missing.map(
      ({ operationId, statuses }) =>
        `  ${operationId}${statuses.length > 0 ? ` (answered only ${statuses.join(", ")})` : " (never called)"}`,
    ),
  ];
}
