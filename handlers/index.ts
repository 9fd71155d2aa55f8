// Every implemented operation, by operationId. An operation of the document missing here answers 501.
import type { HandlerTable } from "../src/http.ts";
import * as auth from "./auth.ts";
import * as health from "./health.ts";
import * as intake from "./intake.ts";
import * as partners from "./partners.ts";
import * as webhooks from "./webhooks.ts";

export const handlers: HandlerTable = {
  ...auth,
  ...health,
  ...intake,
  ...partners,
  ...webhooks,
};
