// Partners: governed launch, partner switch and signed partner callbacks.
import type { IncomingHttpHeaders } from "node:http";
import { principalOf, type Call, type OperationHandler } from "../../http/operations.ts";
import { idempotentReply } from "../../http/idempotency.ts";
import { receiveCallback } from "./callbacks.ts";
import { routeToPartner, type RoutingRequest } from "./routing.ts";

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function route(
  call: Call<"startLaunch"> | Call<"switchPartner">,
  request: Pick<RoutingRequest, "kind" | "partnerKey" | "idempotencyKey">,
) {
  const outcome = await routeToPartner(call.services, {
    ...request,
    principal: principalOf(call),
    contextValues: call.body.context_values,
    returnUrl: call.body.return_url,
    correlationId: header(call.headers, "x-correlation-id"),
    body: call.body,
    requestId: call.requestId,
  });
  const reply = idempotentReply(outcome);
  return {
    status: 200 as const,
    ...reply,
    headers: { "X-Correlation-Id": outcome.body.correlation_id, ...reply.headers },
  };
}

export const startLaunch: OperationHandler<"startLaunch"> = (call) =>
  route(call, { kind: "launch", partnerKey: call.body.partner_key, idempotencyKey: undefined });

export const switchPartner: OperationHandler<"switchPartner"> = (call) =>
  route(call, {
    kind: "switch",
    partnerKey: call.body.target_partner_key,
    idempotencyKey: header(call.headers, "idempotency-key"),
  });

export const receivePartnerCallback: OperationHandler<"receivePartnerCallback"> = async (call) => ({
  status: 202,
  body: await receiveCallback(call.services, {
    partnerKey: call.params.partner_key,
    body: call.body,
    headerSignature: header(call.headers, "x-callback-signature"),
    querySignature: call.query.signature,
    requestId: call.requestId,
  }),
});
