import { readFile } from 'node:fs/promises';
import { FerrumError } from '@ferrum/types';

/** Reads a UTF-8 file, or returns undefined when it does not exist. */
export async function readOptionalText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new FerrumError('invalid_checkpoint', `cannot read ${file}: ${(error as Error).message}`, {
      cause: error,
      details: { file },
    });
  }
}

/** Parses `text` as a JSON object; `file` names it in errors. */
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

/** Reads and parses an optional JSON object file. */
export async function readOptionalJsonObject(file: string): Promise<Record<string, unknown> | undefined> {
  const text = await readOptionalText(file);
  return text === undefined ? undefined : parseJsonObject(text, file);
}
