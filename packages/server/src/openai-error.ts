import { type FerrumErrorCode, isFerrumError } from '@ferrum/types';

/** OpenAI's error `type` values that Ferrum uses. */
export type OpenAIErrorType = 'invalid_request_error' | 'authentication_error' | 'server_error';

/** The JSON body of every error response: `{ error: { message, type, param, code } }` (OpenAI's shape). */
export interface OpenAIErrorBody {
  readonly error: {
    readonly message: string;
    readonly type: OpenAIErrorType;
    readonly param: string | null;
    readonly code: string | null;
  };
}

/** An error that knows its HTTP status and OpenAI body; every route failure becomes one of these. */
export class OpenAIError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly type: OpenAIErrorType,
    readonly code: string | null,
    readonly param: string | null = null,
    /** Extra response headers (`Retry-After`). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'OpenAIError';
  }

  toBody(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** A 400 `invalid_request_error` naming the offending parameter. */
export function invalidRequest(
  message: string,
  param: string | null = null,
  code = 'invalid_value',
): OpenAIError {
  return new OpenAIError(400, message, 'invalid_request_error', code, param);
}

/** HTTP status of each FerrumError code: the client's fault is 4xx, overload 503, the rest 500. */
const STATUS_OF_CODE: Readonly<Record<FerrumErrorCode, number>> = {
  invalid_argument: 400,
  context_length_exceeded: 400,
  // Raised when a request can never fit the KV pool: retrying the same request cannot help.
  kv_exhausted: 400,
  not_found: 404,
  queue_full: 503,
  aborted: 503,
  out_of_memory: 503,
  unsupported_architecture: 500,
  unsupported_dtype: 500,
  missing_tensor: 500,
  shape_mismatch: 500,
  invalid_checkpoint: 500,
  backend_unavailable: 500,
  unsupported_interface_version: 500,
  internal: 500,
};

/** Fastify's own error codes that are the client's fault, with the status and code they answer. */
const FASTIFY_ERRORS: Readonly<Record<string, { status: number; code: string }>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'request_too_large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'invalid_content_length' },
};

/**
 * Map anything thrown while handling a request to an {@link OpenAIError}: FerrumError codes to their
 * status, Fastify's parser and validation errors to 4xx, everything else to a 500 that hides internals.
 */
export function toOpenAIError(error: unknown, retryAfterSeconds: number): OpenAIError {
  if (error instanceof OpenAIError) return error;
  if (isFerrumError(error)) {
    const status = STATUS_OF_CODE[error.code] ?? 500;
    const headers: Record<string, string> =
      status === 503 ? { 'retry-after': String(retryAfterSeconds) } : {};
    const type: OpenAIErrorType = status < 500 ? 'invalid_request_error' : 'server_error';
    const param = typeof error.details?.param === 'string' ? error.details.param : null;
    return new OpenAIError(status, error.message, type, error.code, param, headers);
  }
  const fastifyCode = (error as { code?: unknown }).code;
  const known = typeof fastifyCode === 'string' ? FASTIFY_ERRORS[fastifyCode] : undefined;
  if (known) {
    return new OpenAIError(known.status, (error as Error).message, 'invalid_request_error', known.code);
  }
  if (error instanceof SyntaxError && (error as { statusCode?: unknown }).statusCode === 400) {
    return new OpenAIError(
      400,
      `invalid JSON body: ${error.message}`,
      'invalid_request_error',
      'invalid_json',
    );
  }
  return new OpenAIError(500, 'internal server error', 'server_error', 'internal_error');
}
