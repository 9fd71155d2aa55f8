// Intake: register one document or a batch, and poll a submission.
import { principalOf, type Call, type OperationHandler } from "../../http/operations.ts";
import { idempotentReply } from "../../http/idempotency.ts";
import { getSubmission, submitIntake as submit } from "./submissions.ts";
import type { IntakeItemInput } from "./item-rules.ts";
import { effectiveTenant } from "../../http/tenancy.ts";
import { decodeCursor, encodeCursor } from "../../http/keyset-cursor.ts";
import { listSubmissions } from "../../db/intake.ts";

const DEFAULT_SUBMISSIONS_LIMIT = 50;

async function register(
  call: Call<"submitIntake"> | Call<"submitIntakeBatch">,
  kind: "single" | "batch",
  items: IntakeItemInput[],
) {
  const principal = principalOf(call);
  const { body } = call;
  const key = call.headers["idempotency-key"];
  const outcome = await submit(call.services, {
    principal,
    tenantId: effectiveTenant(principal, call.query.tenant_id),
    kind,
    body,
    items,
    externalReference: body.external_reference ?? null,
    module: body.module ?? null,
    tier: body.tier ?? null,
    idempotencyKey: Array.isArray(key) ? key[0] : key,
    requestId: call.requestId,
  });
  return { status: 201 as const, ...idempotentReply(outcome) };
}

export const submitIntake: OperationHandler<"submitIntake"> = (call) => register(call, "single", [call.body]);

export const submitIntakeBatch: OperationHandler<"submitIntakeBatch"> = (call) =>
  register(call, "batch", call.body.items);

export const listIntakeSubmissions: OperationHandler<"listIntakeSubmissions"> = async (call) => {
  const { query } = call;
  const page = await listSubmissions(call.services.db, effectiveTenant(principalOf(call), query.tenant_id), {
    limit: query.limit === undefined ? DEFAULT_SUBMISSIONS_LIMIT : Number(query.limit),
    ...(query.cursor === undefined ? {} : { after: decodeCursor(query.cursor) }),
    ...(query.status === undefined ? {} : { status: query.status }),
    ...(query.external_reference === undefined ? {} : { externalReference: query.external_reference }),
    ...(query.created_after === undefined ? {} : { createdAfter: query.created_after }),
    ...(query.created_before === undefined ? {} : { createdBefore: query.created_before }),
  });
  return {
    status: 200,
    body: { submissions: page.submissions, next_cursor: page.next === null ? null : encodeCursor(page.next) },
  };
};

export const getIntakeSubmission: OperationHandler<"getIntakeSubmission"> = async (call) => {
  const principal = principalOf(call);
  return {
    status: 200,
    body: await getSubmission(
      call.services,
      effectiveTenant(principal, call.query.tenant_id),
      call.params.submission_id,
    ),
  };
};
