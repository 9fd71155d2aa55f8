// The document's main bodies under names of their own, for code that names what it holds:
// `const submission: IntakeSubmission = data`. Each is the schema's type as openapi-typescript writes it,
// remade by a mapped type over its keys (every property, `?` and `readonly` kept): the compiler prints the
// name of a type made in an alias's own declaration, so a type error says `IntakeSubmission` where an alias
// of `components["schemas"]["IntakeSubmissionResponse"]` would print the whole structure. Only object
// schemas: a mapped type over a union would keep only the keys its members share. Every other schema is
// `Schemas["Name"]`.
import type { components } from "../../../generated/openapi.ts";

type S = components["schemas"];

/** The body of `submitIntake` (`IntakeSubmitRequest`). */
export type IntakeSubmitRequest = { [K in keyof S["IntakeSubmitRequest"]]: S["IntakeSubmitRequest"][K] };
/** The body of `submitIntakeBatch` (`IntakeBatchRequest`). */
export type IntakeBatchRequest = { [K in keyof S["IntakeBatchRequest"]]: S["IntakeBatchRequest"][K] };
/** One document of a batch (`IntakeBatchItem`). */
export type IntakeBatchItem = { [K in keyof S["IntakeBatchItem"]]: S["IntakeBatchItem"][K] };
/** A submission, as intake answers it and lists it (`IntakeSubmissionResponse`). */
export type IntakeSubmission = { [K in keyof S["IntakeSubmissionResponse"]]: S["IntakeSubmissionResponse"][K] };
/** A submission with all of its items (`IntakeSubmissionDetailResponse`). */
export type IntakeSubmissionDetail = {
  [K in keyof S["IntakeSubmissionDetailResponse"]]: S["IntakeSubmissionDetailResponse"][K];
};
/** One document of a submission (`IntakeItemResponse`). */
export type IntakeItem = { [K in keyof S["IntakeItemResponse"]]: S["IntakeItemResponse"][K] };

/** The body of `createWebhookSubscription` (`WebhookSubscriptionCreateRequest`). */
export type WebhookSubscriptionCreateRequest = {
  [K in keyof S["WebhookSubscriptionCreateRequest"]]: S["WebhookSubscriptionCreateRequest"][K];
};
/** The body of `updateWebhookSubscription` (`WebhookSubscriptionUpdateRequest`). */
export type WebhookSubscriptionUpdateRequest = {
  [K in keyof S["WebhookSubscriptionUpdateRequest"]]: S["WebhookSubscriptionUpdateRequest"][K];
};
/** A webhook subscription as every answer but create and rotate-secret shows it: no secret (`WebhookSubscription`). */
export type WebhookSubscription = { [K in keyof S["WebhookSubscription"]]: S["WebhookSubscription"][K] };
/** A subscription with its signing secret, as create and rotate-secret answer (`WebhookSubscriptionResponse`). */
export type WebhookSubscriptionWithSecret = {
  [K in keyof S["WebhookSubscriptionResponse"]]: S["WebhookSubscriptionResponse"][K];
};
/** One delivery of an event to a subscription (`WebhookDeliveryResponse`). */
export type WebhookDelivery = { [K in keyof S["WebhookDeliveryResponse"]]: S["WebhookDeliveryResponse"][K] };
/** One attempt to send a delivery (`WebhookDeliveryAttempt`). */
export type WebhookDeliveryAttempt = { [K in keyof S["WebhookDeliveryAttempt"]]: S["WebhookDeliveryAttempt"][K] };
/** A delivery and every attempt made to send it (`WebhookDeliveryDetailResponse`). */
export type WebhookDeliveryDetail = {
  [K in keyof S["WebhookDeliveryDetailResponse"]]: S["WebhookDeliveryDetailResponse"][K];
};
/** One event, as recorded when it was queued for at least one subscription (`WebhookEventResponse`). */
export type WebhookEventRecord = { [K in keyof S["WebhookEventResponse"]]: S["WebhookEventResponse"][K] };

/** The body of `switchPartner` (`PartnerSwitchRequest`). */
export type PartnerSwitchRequest = { [K in keyof S["PartnerSwitchRequest"]]: S["PartnerSwitchRequest"][K] };
/** The outcome of a launch or a switch (`RoutingDecisionResponse`). */
export type RoutingDecision = { [K in keyof S["RoutingDecisionResponse"]]: S["RoutingDecisionResponse"][K] };
/** The caller as read from the bearer token (`CurrentPrincipalResponse`). */
export type CurrentPrincipal = { [K in keyof S["CurrentPrincipalResponse"]]: S["CurrentPrincipalResponse"][K] };
/** The answer of `POST /token` (`TokenResponse`). */
export type TokenResponse = { [K in keyof S["TokenResponse"]]: S["TokenResponse"][K] };

/** The body of every coded error: `error.code`, `error.message`, `request_id` (`ReviewApiErrorEnvelope`). */
export type ApiError = { [K in keyof S["ReviewApiErrorEnvelope"]]: S["ReviewApiErrorEnvelope"][K] };
/** A 422: every schema violation of the request, in FastAPI's shape (`HTTPValidationError`). */
export type HTTPValidationError = { [K in keyof S["HTTPValidationError"]]: S["HTTPValidationError"][K] };
/** One violation of a 422: where (`loc`), what (`type`), in words (`msg`) (`ValidationError`). */
export type ValidationError = { [K in keyof S["ValidationError"]]: S["ValidationError"][K] };
/** An RFC 6749 error of `POST /token` (`OAuthErrorResponse`). */
export type OAuthError = { [K in keyof S["OAuthErrorResponse"]]: S["OAuthErrorResponse"][K] };
