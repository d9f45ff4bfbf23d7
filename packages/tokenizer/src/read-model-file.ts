import { readFile } from 'node:fs/promises';
import { parseJsonObject } from '@ferrum/models';
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

/** Reads and parses an optional JSON object file. */
export async function readOptionalJsonObject(file: string): Promise<Record<string, unknown> | undefined> {
  const text = await readOptionalText(file);
  return text === undefined ? undefined : parseJsonObject(text, file);
}
