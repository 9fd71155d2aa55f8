// Every implemented operation, by operationId. An operation of the document missing here answers 501.
import type { HandlerTable } from "../http/operations.ts";
import * as auth from "./auth/index.ts";
import * as health from "./probes/index.ts";
import * as intake from "./intake/index.ts";
import * as partners from "./partners/index.ts";
import * as webhooks from "./webhooks/index.ts";

export const handlers: HandlerTable = {
  ...auth,
  ...health,
  ...intake,
  ...partners,
  ...webhooks,
};
