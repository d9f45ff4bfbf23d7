/**
 * A seeded uniform generator in [0, 1) (mulberry32): the same seed gives the same sequence, so benchmark
 * inputs and randomized test workloads replay exactly. Not the sampling RNG (see @ferrum/sampler).
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
