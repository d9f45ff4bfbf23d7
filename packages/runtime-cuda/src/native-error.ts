import { FerrumError, type FerrumErrorCode, isFerrumError } from '@ferrum/types';

const CODES: ReadonlySet<string> = new Set<FerrumErrorCode>([
  'invalid_argument',
  'unsupported_architecture',
  'unsupported_dtype',
  'invalid_checkpoint',
  'backend_unavailable',
  'out_of_memory',
  'internal',
]);

/** Turns an addon rejection (an Error with `ferrumCode`) into a FerrumError; anything unexpected is `internal`. */
export function toFerrumError(error: unknown): FerrumError {
  if (isFerrumError(error)) return error;
  const code = (error as { ferrumCode?: unknown } | null)?.ferrumCode;
  const message = error instanceof Error ? error.message : String(error);
  const known = typeof code === 'string' && CODES.has(code) ? (code as FerrumErrorCode) : 'internal';
  return new FerrumError(known, `runtime-cuda: ${message}`, { cause: error });
}

/** Awaits an addon call, rethrowing its failure as a FerrumError. */
export async function native<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toFerrumError(error);
  }
}
