import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModelConfig, readSafetensorsHeader } from '@ferrum/models';
import { type ForwardBatch, type ModelConfig, type RowSampling, resolveSamplingParams } from '@ferrum/types';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..', '..');
export const sharedDir = path.resolve(repoRoot, '..', 'shared');
export const sharedTinyModels = path.join(sharedDir, 'fixtures', 'tiny-models');
export const repoTinyModels = path.join(repoRoot, 'fixtures', 'tiny-models');

export interface TinyModel {
  /** `<source>/<folder>`, e.g. `shared/llama2-mha`. */
  readonly label: string;
  readonly dir: string;
}

/** Tiny checkpoints under `root` (folders holding a golden.json); empty when `root` is absent. */
export function tinyModelsIn(root: string, source: string): TinyModel[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(root, entry.name, 'golden.json')))
    .map((entry) => ({ label: `${source}/${entry.name}`, dir: path.join(root, entry.name) }))
    .sort((a, b) => a.label.localeCompare(b.label));
}

export interface Golden {
  readonly config: ModelConfig;
  readonly prompts: number[][];
  readonly greedy: number[][];
  /** logits[i]: [prompt i length × vocab], f32, from transformers. */
  readonly logits: Float32Array[];
}

export async function readGolden(dir: string): Promise<Golden> {
  const json = JSON.parse(await readFile(path.join(dir, 'golden.json'), 'utf8')) as {
    prompts: number[][];
    greedy: number[][];
  };
  const file = path.join(dir, 'golden.safetensors');
  const bytes = await readFile(file);
  const entries = new Map((await readSafetensorsHeader(file)).map((entry) => [entry.name, entry]));
  const logits = json.prompts.map((_, i) => {
    const entry = entries.get(`logits.${i}`)!;
    const copy = bytes.buffer.slice(
      bytes.byteOffset + entry.byteOffset,
      bytes.byteOffset + entry.byteOffset + entry.byteLength,
    );
    return new Float32Array(copy);
  });
  return { config: await loadModelConfig(dir), prompts: json.prompts, greedy: json.greedy, logits };
}

/** One sequence's part of a step: its new tokens and its whole KV list (cached prefix, then the new tokens' slots). */
export interface SeqStep {
  readonly tokens: readonly number[];
  readonly kvSlots: readonly number[];
  /** Which of its rows are sampled: every row or the last one. */
  readonly sample: 'all' | 'last';
}

/** A flattened ForwardBatch for `steps`, positions following the KV list (prefix length + i). */
export function buildBatch(steps: readonly SeqStep[], sampling?: 'greedy'): ForwardBatch {
  const tokenIds: number[] = [];
  const positions: number[] = [];
  const slotMapping: number[] = [];
  const sampleRows: number[] = [];
  const kvIndices: number[] = [];
  const qIndptr = [0];
  const kvIndptr = [0];
  for (const step of steps) {
    const prefix = step.kvSlots.length - step.tokens.length;
    step.tokens.forEach((token, i) => {
      if (step.sample === 'all' || i === step.tokens.length - 1) sampleRows.push(tokenIds.length);
      tokenIds.push(token);
      positions.push(prefix + i);
      slotMapping.push(step.kvSlots[prefix + i]);
    });
    kvIndices.push(...step.kvSlots);
    qIndptr.push(tokenIds.length);
    kvIndptr.push(kvIndices.length);
  }
  const greedy: RowSampling = {
    requestId: 'test',
    params: resolveSamplingParams({ temperature: 0 }),
    seed: 0,
    outputTokenIds: new Int32Array(0),
    promptTokenIds: new Int32Array(0),
    needsHostLogits: false,
  };
  return {
    tokenIds: Int32Array.from(tokenIds),
    positions: Int32Array.from(positions),
    qIndptr: Int32Array.from(qIndptr),
    kvIndptr: Int32Array.from(kvIndptr),
    kvIndices: Int32Array.from(kvIndices),
    slotMapping: Int32Array.from(slotMapping),
    sampleRows: Int32Array.from(sampleRows),
    sampling: sampling === 'greedy' ? sampleRows.map(() => greedy) : undefined,
    numSeqs: steps.length,
    numTokens: tokenIds.length,
  };
}

/** Consecutive integers [start, start + count). */
export function range(start: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i);
}

/** Largest |a[i] - b[i]|. */
export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return a.length === b.length ? worst : Number.POSITIVE_INFINITY;
}

/** max - min over all values. */
export function valueRange(values: Float32Array): number {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) {
    min = Math.min(min, value);
    max = Math.max(max, value);
  }
  return max - min;
}
