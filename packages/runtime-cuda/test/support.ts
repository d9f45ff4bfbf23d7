import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModelExecutor } from '@ferrum/interfaces';
import { buildBatch, range, type TinyModel, tinyModelsIn } from '@ferrum/models/testing';
import { bf16Bits } from '../src/bf16.js';
import { createCudaBackend } from '../src/index.js';
import { TEST_MAX_BATCH_TOKENS } from './load-cuda.js';

export { loadCuda } from './load-cuda.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..', '..');

/**
 * Tiny checkpoints with transformers goldens: FERRUM_TINY_MODELS (the GPU machine gets a carried copy),
 * else the repo's fixtures/tiny-models, plus ../shared's when present.
 */
export function tinyModels(): TinyModel[] {
  const env = process.env.FERRUM_TINY_MODELS;
  if (env) return tinyModelsIn(env, 'env');
  return [
    ...tinyModelsIn(path.join(repoRoot, 'fixtures', 'tiny-models'), 'repo'),
    ...tinyModelsIn(path.resolve(repoRoot, '..', 'shared', 'fixtures', 'tiny-models'), 'shared'),
  ];
}

/** Whether the CUDA backend can run here, and why not. */
export async function cudaAvailability(): Promise<{ available: boolean; reason: string }> {
  const capabilities = await createCudaBackend().probe();
  return { available: capabilities.available, reason: capabilities.reason ?? capabilities.device };
}

/**
 * A directory holding only the config.json of a small Qwen3-shaped model (2 layers, hidden 256, vocab 512) with
 * real attention shapes, for `dummy` loads: the tiny checkpoints' head dims (16, 32) leave the kernels of real
 * models' 64 and 128 unexercised.
 */
export function dummyQwen3Dir(headDim: number, heads: number, kvHeads: number): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ferrum-dummy-'));
  const config = {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    hidden_size: 256,
    intermediate_size: 512,
    num_hidden_layers: 2,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    vocab_size: 512,
    max_position_embeddings: 4096,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    tie_word_embeddings: true,
    torch_dtype: 'bfloat16',
  };
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}

/** `count` uniform values in [lo, hi), each rounded to bf16, as bits (the hooks' operands). */
export function randomBf16(count: number, random: () => number, lo: number, hi: number): Uint16Array {
  const bits = new Uint16Array(count);
  for (let i = 0; i < count; i++) bits[i] = bf16Bits(lo + (hi - lo) * random());
  return bits;
}

/** How many elements of `a` and `b` differ in their bits (a length difference counts as that many). */
export function differingBits(a: Float32Array, b: Float32Array): number {
  const wa = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const wb = new Uint32Array(b.buffer, b.byteOffset, b.length);
  let differing = Math.abs(wa.length - wb.length);
  for (let i = 0; i < Math.min(wa.length, wb.length); i++) if (wa[i] !== wb[i]) differing++;
  return differing;
}

/**
 * Prefills `tokens` of one sequence into slots firstSlot.. in steps of at most TEST_MAX_BATCH_TOKENS, each a chunk over
 * the prefix cached before it, sampling nothing.
 */
export async function prefillInSteps(
  executor: ModelExecutor,
  tokens: readonly number[],
  firstSlot: number,
): Promise<void> {
  for (let from = 0; from < tokens.length; from += TEST_MAX_BATCH_TOKENS) {
    const to = Math.min(tokens.length, from + TEST_MAX_BATCH_TOKENS);
    await executor.forward(
      buildBatch([{ tokens: tokens.slice(from, to), kvSlots: range(firstSlot, to), sample: 'none' }]),
    );
  }
}
