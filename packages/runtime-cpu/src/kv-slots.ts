import type { ModelConfig } from '@ferrum/types';

/** Upper bound of an automatically sized pool, in tokens. */
export const MAX_DEFAULT_KV_SLOTS = 65_536;
/** Share of free memory an automatically sized pool may take. */
export const DEFAULT_KV_MEMORY_FRACTION = 0.3;
/** Host tier budget when none is given (vLLM's default `swap_space`). */
export const DEFAULT_SWAP_SPACE_BYTES = 4 * 2 ** 30;

/** Bytes one KV slot takes: K and V of every layer, f32. */
export function kvBytesPerToken(config: ModelConfig): number {
  return 2 * config.numLayers * config.numKvHeads * config.headDim * 4;
}

/** Pool size when the spec names none: 30% of free memory, at most {@link MAX_DEFAULT_KV_SLOTS}, at least 1. */
export function defaultKvSlots(config: ModelConfig, freeMemoryBytes: number): number {
  const fit = Math.floor((freeMemoryBytes * DEFAULT_KV_MEMORY_FRACTION) / kvBytesPerToken(config));
  return Math.max(1, Math.min(fit, MAX_DEFAULT_KV_SLOTS));
}

/** Host tier size when the spec names none: {@link DEFAULT_SWAP_SPACE_BYTES}, at most the pool's size. */
export function defaultHostSlots(config: ModelConfig, numSlots: number): number {
  return Math.min(numSlots, Math.floor(DEFAULT_SWAP_SPACE_BYTES / kvBytesPerToken(config)));
}
