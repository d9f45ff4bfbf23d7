// What the engine-level GPU scripts share (bench-speed.ts, trace-ttft.ts): the engine options of issue 7's
// figures and seeded random token-id prompts.
import type { EngineOptions } from '../../packages/engine/src/index.js';
import { seededRandom } from '../../packages/types/src/index.js';

/**
 * The speed figures' engine: dummy weights of the model in `dir` on CUDA, up to 256 sequences and 4,096 tokens
 * a step, a KV pool of `maxKvTokens`.
 */
export function speedEngineOptions(dir: string, maxKvTokens: number, enforceEager = false): EngineOptions {
  return {
    model: dir,
    device: 'cuda',
    loadFormat: 'dummy',
    maxNumSeqs: 256,
    maxNumBatchedTokens: 4096,
    maxModelLen: 8192,
    maxKvTokens,
    seed: 1,
    enforceEager,
  };
}

/** A source of seeded random prompts of ids in [1000, vocabSize - 1000). */
export function randomPrompts(vocabSize: number): (length: number) => number[] {
  const random = seededRandom(1);
  return (length) => Array.from({ length }, () => 1000 + Math.floor(random() * (vocabSize - 2000)));
}
