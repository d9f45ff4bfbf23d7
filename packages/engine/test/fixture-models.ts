import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repo's own tiny checkpoints (made by scripts/fixtures/make_tiny_models.py with transformers). */
export const FIXTURES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../fixtures/tiny-models');

export const FIXTURE_NAMES = [
  'llama2-mha',
  'llama3-gqa-tied',
  'qwen2-bias-tied',
  'qwen3-qknorm',
  'qwen3-untied-mqa',
] as const;

/** transformers' prompts and greedy continuations (24 tokens, EOS ignored) of one fixture. */
export interface Golden {
  readonly prompts: number[][];
  readonly greedy: number[][];
}

export function fixtureDir(name: string): string {
  return join(FIXTURES_DIR, name);
}

export function readGolden(name: string): Golden {
  return JSON.parse(readFileSync(join(fixtureDir(name), 'golden.json'), 'utf8')) as Golden;
}

/** How golden.json's continuations were made: greedy, 24 tokens, EOS ignored. */
export const GOLDEN_SAMPLING = { temperature: 0, maxTokens: 24, ignoreEos: true } as const;
