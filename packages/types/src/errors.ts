/**
 * Stable error codes. Clients (the HTTP server, the CLI, third-party code) switch on these strings;
 * renaming one is a breaking change.
 */
export type FerrumErrorCode =
  | 'invalid_argument'
  | 'unsupported_architecture'
  | 'unsupported_dtype'
  | 'missing_tensor'
  | 'shape_mismatch'
  | 'invalid_checkpoint'
  | 'backend_unavailable'
  | 'out_of_memory'
  | 'kv_exhausted'
  | 'context_length_exceeded'
  | 'queue_full'
  | 'not_found'
  | 'aborted'
  | 'unsupported_interface_version'
  | 'internal';

/** The one error class Ferrum throws for expected failures; `code` is stable, `message` is for people. */
export class FerrumError extends Error {
  readonly code: FerrumErrorCode;
  /** Extra machine-readable context (tensor name, file, limits), never secrets. */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: FerrumErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FerrumError';
    this.code = code;
    this.details = options?.details;
  }
}

/** Type guard that also works across duplicated copies of this package (checks the shape, not the class). */
export function isFerrumError(value: unknown): value is FerrumError {
  return (
    value instanceof Error &&
    (value as { name?: unknown }).name === 'FerrumError' &&
    typeof (value as { code?: unknown }).code === 'string'
  );
}
