import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { readSafetensorsHeader } from '../../src/read-safetensors-header.js';

/** The shape-independent facts of a tiny model's goldens, to compare two fixture sets. */
export interface GoldenStructure {
  readonly goldenKeys: readonly string[];
  readonly numPrompts: number;
  readonly greedyLengths: readonly number[];
  readonly logits: readonly { readonly name: string; readonly dtype: string; readonly rank: number }[];
}

/**
 * Reads golden.json and golden.safetensors of `modelDir`, checks that they agree with each other
 * (one logits tensor per prompt, [prompt length, vocab] f32) and returns their structure.
 */
export async function readGoldenStructure(modelDir: string, vocabSize: number): Promise<GoldenStructure> {
  const golden = JSON.parse(await readFile(path.join(modelDir, 'golden.json'), 'utf8'));
  const prompts = golden.prompts as number[][];
  const greedy = golden.greedy as number[][];
  expect(typeof golden.transformers).toBe('string');
  expect(typeof golden.torch).toBe('string');
  expect(greedy).toHaveLength(prompts.length);
  for (const ids of [...prompts, ...greedy]) {
    expect(ids.every((id) => Number.isInteger(id) && id >= 0 && id < vocabSize)).toBe(true);
  }
  const logits = await readSafetensorsHeader(path.join(modelDir, 'golden.safetensors'));
  expect(logits.map((entry) => entry.name).sort()).toEqual(prompts.map((_, i) => `logits.${i}`).sort());
  for (const entry of logits) {
    const prompt = prompts[Number(entry.name.slice('logits.'.length))]!;
    expect(entry.shape).toEqual([prompt.length, vocabSize]);
  }
  return {
    goldenKeys: Object.keys(golden).sort(),
    numPrompts: prompts.length,
    greedyLengths: greedy.map((ids) => ids.length),
    logits: logits
      .map((entry) => ({ name: entry.name, dtype: entry.dtype, rank: entry.shape.length }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}
