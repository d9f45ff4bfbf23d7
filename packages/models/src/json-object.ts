import { FerrumError } from '@ferrum/types';

/**
 * Parse `text` as a JSON object (the shape of every Hugging Face model file); `file` names it in errors.
 *
 * @throws FerrumError `invalid_checkpoint` for invalid JSON or a value that is not an object.
 */
export function parseJsonObject(text: string, file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new FerrumError('invalid_checkpoint', `${file} is not valid JSON: ${(error as Error).message}`, {
      cause: error,
      details: { file },
    });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FerrumError('invalid_checkpoint', `${file} must hold a JSON object`, { details: { file } });
  }
  return value as Record<string, unknown>;
}
