/**
 * Seeds for requests. Sampling draws are a pure function of (seed, tokens generated so far), so every
 * sequence needs its own seed: an unseeded request takes the next value of a seeded stream, and the
 * sequences of an `n > 1` request derive theirs from the request's seed by index.
 */
export class SeedStream {
  private state: number;

  constructor(seed: number) {
    this.state = seed | 0;
  }

  /** Next u32 of the stream (SplitMix32: a Weyl sequence passed through a 32-bit finalizer). */
  next(): number {
    this.state = (this.state + 0x9e3779b9) | 0;
    return mix32(this.state);
  }
}

/**
 * Seed of sequence `index` of a request seeded with `requestSeed` (a u32). Index 0 keeps the request's seed,
 * so sequence 0 of an `n > 1` request samples what the same request with `n = 1` would.
 */
export function sequenceSeed(requestSeed: number, index: number): number {
  return index === 0 ? requestSeed >>> 0 : mix32((requestSeed + Math.imul(index, 0x9e3779b9)) | 0);
}

/** A bijective 32-bit avalanche (MurmurHash3's finalizer); returns a u32. */
function mix32(value: number): number {
  let z = value;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}
