// Intake: register one document or a batch, and poll a submission.
import { principalOf, type Call, type OperationHandler } from "../../http/operations.ts";
import { idempotentReply } from "../../http/idempotency.ts";
import { getSubmission, submitIntake as submit } from "./submissions.ts";
import type { IntakeItemInput } from "./item-rules.ts";
import { effectiveTenant } from "../../http/tenancy.ts";

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
