import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModelExecutor } from '@ferrum/interfaces';
import { loadModelConfig, readSafetensorsHeader } from '@ferrum/models';
import type { ForwardBatch, ModelConfig, RowSampling } from '@ferrum/types';
import { createCudaBackend } from '../src/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..', '..');

/**
 * Tiny checkpoints with transformers goldens: FERRUM_TINY_MODELS (the GPU machine gets a carried copy),
 * else the repo's fixtures/tiny-models, plus ../shared's when present.
 */
export function tinyModels(): { label: string; dir: string }[] {
  const roots = process.env.FERRUM_TINY_MODELS
    ? [['env', process.env.FERRUM_TINY_MODELS]]
    : [
        ['repo', path.join(repoRoot, 'fixtures', 'tiny-models')],
        ['shared', path.resolve(repoRoot, '..', 'shared', 'fixtures', 'tiny-models')],
      ];
  return roots.flatMap(([source, root]) =>
    existsSync(root)
      ? readdirSync(root, { withFileTypes: true })
          .filter((entry) => entry.isDirectory() && existsSync(path.join(root, entry.name, 'golden.json')))
          .map((entry) => ({ label: `${source}/${entry.name}`, dir: path.join(root, entry.name) }))
      : [],
  );
}

export interface Golden {
  readonly config: ModelConfig;
  readonly prompts: number[][];
  readonly greedy: number[][];
  /** logits[i]: [prompt i length × vocab] f32 from transformers. */
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
    const entry = entries.get(`logits.${i}`);
    if (!entry) throw new Error(`golden logits.${i} missing in ${file}`);
    const start = bytes.byteOffset + entry.byteOffset;
    return new Float32Array(bytes.buffer.slice(start, start + entry.byteLength));
  });
  return { config: await loadModelConfig(dir), prompts: json.prompts, greedy: json.greedy, logits };
}

/** Loads a checkpoint on the CUDA backend with test-sized pools. */
export function loadCuda(
  dir: string,
  config: ModelConfig,
  backendOptions: Record<string, unknown> = {},
): Promise<ModelExecutor> {
  return createCudaBackend().loadModel({
    modelDir: dir,
    config,
    loadFormat: 'safetensors',
    maxKvTokens: 4096,
    maxBatchTokens: 512,
    maxBatchSeqs: 16,
    backendOptions: { maxSampleRows: 512, swapSpaceTokens: 1024, ...backendOptions },
  });
}

/** One sequence's part of a step: its new tokens and its whole KV list (cached prefix, then the new slots). */
export interface SeqStep {
  readonly tokens: readonly number[];
  readonly kvSlots: readonly number[];
  readonly sample: 'all' | 'last' | 'none';
}

/** A flattened ForwardBatch; positions follow the KV list (prefix length + i). */
export function buildBatch(steps: readonly SeqStep[], sampling?: (row: number) => RowSampling): ForwardBatch {
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
      if (step.sample === 'all' || (step.sample === 'last' && i === step.tokens.length - 1)) {
        sampleRows.push(tokenIds.length);
      }
      tokenIds.push(token);
      positions.push(prefix + i);
      slotMapping.push(step.kvSlots[prefix + i]);
    });
    kvIndices.push(...step.kvSlots);
    qIndptr.push(tokenIds.length);
    kvIndptr.push(kvIndices.length);
  }
  return {
    tokenIds: Int32Array.from(tokenIds),
    positions: Int32Array.from(positions),
    qIndptr: Int32Array.from(qIndptr),
    kvIndptr: Int32Array.from(kvIndptr),
    kvIndices: Int32Array.from(kvIndices),
    slotMapping: Int32Array.from(slotMapping),
    sampleRows: Int32Array.from(sampleRows),
    sampling: sampling ? sampleRows.map((_, i) => sampling(i)) : undefined,
    numSeqs: steps.length,
    numTokens: tokenIds.length,
  };
}

/** Logits of every position of `prompt`, prefilled alone at slots [base, base + length). */
export async function prefillAll(
  executor: ModelExecutor,
  prompt: readonly number[],
  base: number,
): Promise<Float32Array> {
  const result = await executor.forward(
    buildBatch([{ tokens: prompt, kvSlots: range(base, prompt.length), sample: 'all' }]),
  );
  if (!result.logits) throw new Error('no logits returned');
  return result.logits;
}

export function range(start: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i);
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

export function valueRange(values: Float32Array): number {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) {
    min = Math.min(min, value);
    max = Math.max(max, value);
  }
  return max - min;
}

/** Whether the CUDA backend can run here, and why not. */
export async function cudaAvailability(): Promise<{ available: boolean; reason: string }> {
  const capabilities = await createCudaBackend().probe();
  return { available: capabilities.available, reason: capabilities.reason ?? capabilities.device };
}
