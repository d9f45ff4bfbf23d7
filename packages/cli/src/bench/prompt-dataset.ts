import { readFile } from 'node:fs/promises';
import { FerrumError, seededRandom } from '@ferrum/types';

/** A benchmark prompt: token ids (exact input length) or text. */
export type BenchPrompt = { readonly tokenIds: readonly number[] } | { readonly text: string };

/**
 * `numPrompts` prompts of exactly `prefixLen + inputLen` token ids drawn uniformly from `[0, vocabSize)`:
 * one random prefix of `prefixLen` ids shared by every prompt (a prefix cache's hits), then `inputLen`
 * ids of each prompt's own. Token-id prompts fix the input length whatever the tokenizer, and random ids
 * make prefix-cache hits beyond the shared prefix negligible.
 */
export function randomPrompts(
  numPrompts: number,
  inputLen: number,
  vocabSize: number,
  seed: number,
  prefixLen = 0,
): BenchPrompt[] {
  const random = seededRandom(seed);
  const draw = (length: number) => Array.from({ length }, () => Math.floor(random() * vocabSize));
  const prefix = draw(prefixLen);
  return Array.from({ length: numPrompts }, () => ({ tokenIds: [...prefix, ...draw(inputLen)] }));
}

/**
 * Prompts from a file: JSON Lines with a `prompt` (text) or `prompt_token_ids` field per line, or plain
 * text with one prompt per line. Cycled when the file has fewer than `numPrompts`.
 */
export async function filePrompts(path: string, numPrompts: number): Promise<BenchPrompt[]> {
  let content: string;
  try {
    content = await readFile(path, 'utf8');
  } catch {
    throw new FerrumError(
      'invalid_argument',
      `--dataset ${path}: no such file (use "random" or a file of prompts)`,
    );
  }
  const lines = content.split('\n').filter((line) => line.trim() !== '');
  const prompts = lines.map((line, i) =>
    path.endsWith('.jsonl') ? fromJsonLine(line, path, i + 1) : { text: line },
  );
  if (prompts.length === 0) throw new FerrumError('invalid_argument', `--dataset ${path} holds no prompt`);
  return Array.from({ length: numPrompts }, (_, i) => prompts[i % prompts.length]);
}

function fromJsonLine(line: string, path: string, lineNumber: number): BenchPrompt {
  let value: { prompt?: unknown; prompt_token_ids?: unknown };
  try {
    value = JSON.parse(line);
  } catch {
    throw new FerrumError('invalid_argument', `${path}:${lineNumber}: not valid JSON`);
  }
  if (typeof value.prompt === 'string') return { text: value.prompt };
  if (Array.isArray(value.prompt_token_ids) && value.prompt_token_ids.every(Number.isInteger)) {
    return { tokenIds: value.prompt_token_ids as number[] };
  }
  throw new FerrumError(
    'invalid_argument',
    `${path}:${lineNumber}: needs "prompt" (text) or "prompt_token_ids"`,
  );
}
