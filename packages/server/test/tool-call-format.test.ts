import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadTokenizer } from '@ferrum/tokenizer';
import { describe, expect, it } from 'vitest';
import { detectToolCallFormat } from '../src/index.js';

const tokenizers = join(resolve(import.meta.dirname, '../../..'), '..', 'shared', 'models', 'tokenizers');
const present = existsSync(tokenizers);

describe.skipIf(!present)(
  `tool-call format of real chat templates${present ? '' : ' (skipped: ../shared absent)'}`,
  () => {
    // What each family's model card documents: Qwen2.5/Qwen3 write Hermes <tool_call> tags, Llama 3.2
    // writes a bare {"name": ..., "parameters": ...} object, Mistral v0.3 writes [TOOL_CALLS] and a JSON
    // array; Llama 3's, GPT-2's and Mistral v0.1's templates have no tools.
    it.each([
      ['qwen3', 'hermes'],
      ['qwen2.5', 'hermes'],
      ['llama3.2', 'llama3_json'],
      ['mistral-7b-instruct-v0.3', 'mistral'],
      ['mistral-7b-v0.1', null],
      ['llama3', null],
      ['gpt2', null],
    ])('%s → %s', async (name, format) => {
      const tokenizer = await loadTokenizer(join(tokenizers, name));
      try {
        expect(detectToolCallFormat(tokenizer)).toBe(format);
      } finally {
        await tokenizer?.dispose();
      }
    });
  },
);
