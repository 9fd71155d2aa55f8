// The error envelope: every coded error the service answers with is an ApiError rendered here.
import type { Response } from "express";
import type { components } from "../generated/openapi.ts";

/** The codes the document lists (schema ErrorCode): ERROR_STATUS must name each one, and no other. */
export type ErrorCode = components["schemas"]["ErrorCode"];

export const ERROR_STATUS = {
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  IDEMPOTENCY_KEY_MISMATCH: 409,
  IDEMPOTENCY_IN_PROGRESS: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_INVALID: 422,
  CONTEXT_INVALID: 422,
  CALLBACK_SIGNATURE_INVALID: 400,
  CALLBACK_PAYLOAD_INVALID: 400,
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
  NOT_IMPLEMENTED: 501,
  WEBHOOK_SUBSCRIPTION_LIMIT_REACHED: 409,
  WEBHOOK_SUBSCRIPTION_DUPLICATE_URL: 409,
  WEBHOOK_SUBSCRIPTION_DISABLED: 409,
  WEBHOOK_SUBSCRIPTION_INACTIVE: 409,
  WEBHOOK_LISTEN_SESSION_LIMIT_REACHED: 409,
  WEBHOOK_LISTEN_ANSWER_NOT_EXPECTED: 409,
} as const satisfies Record<ErrorCode, number>;

export interface ErrorEnvelope {
  error: { code: string; message: string; details?: Record<string, unknown> };
  request_id: string;
}

export class ApiError extends Error {
  override name = "ApiError";
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; headers?: Record<string, string>; status?: number } = {},
  ) {
    super(message);
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code];
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

export function envelope(
  code: string,
  message: string,
  requestId: string,
  details?: Record<string, unknown>,
): ErrorEnvelope {
  return details === undefined
    ? { error: { code, message }, request_id: requestId }
    : { error: { code, message, details }, request_id: requestId };
}

export function sendApiError(res: Response, error: ApiError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json(envelope(error.code, error.message, String(res.locals.requestId ?? ""), error.details));
}

export const notFound = (what: string): ApiError => new ApiError("NOT_FOUND", `${what} not found`);

/** RFC 6749 §5.2 errors of the token endpoint, which use their own body instead of the envelope. */
export class OAuthError extends Error {
  override name = "OAuthError";
  readonly error:
    "invalid_request" | "invalid_client" | "invalid_grant" | "unsupported_grant_type" | "unauthorized_client";
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    error: OAuthError["error"],
    description: string,
    options: { status?: number; headers?: Record<string, string> } = {},
  ) {
    super(description);
    this.error = error;
    this.status = options.status ?? (error === "invalid_client" ? 401 : 400);
    this.headers = options.headers ?? {};
  }
}

export function sendOAuthError(res: Response, error: OAuthError): void {
  res.setHeader("Cache-Control", "no-store");
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json({ error: error.error, error_description: error.message });
}
