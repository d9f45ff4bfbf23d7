/** SplitMix64's increment (the 64-bit golden ratio), as 32-bit halves. */
const GAMMA_HI = 0x9e3779b9;
const GAMMA_LO = 0x7f4a7c15;
/** SplitMix64's two finalizer multipliers, as 32-bit halves. */
const MIX1_HI = 0xbf58476d;
const MIX1_LO = 0x1ce4e5b9;
const MIX2_HI = 0x94d049bb;
const MIX2_LO = 0x133111eb;
const TWO_POW_32 = 4294967296;
const TWO_POW_MINUS_53 = 2 ** -53;

// 64-bit words are carried as (hi, lo) pairs of uint32 in these two slots so that the hot path allocates
// nothing (BigInt would allocate per draw). Module-local scratch, not shared state: every call overwrites it
// before reading it.
let wordHi = 0;
let wordLo = 0;

/** High 32 bits of the unsigned 64-bit product a × b of two uint32 (16-bit limbs keep every term exact). */
function mulHigh32(a: number, b: number): number {
  const a0 = a & 0xffff;
  const a1 = a >>> 16;
  const b0 = b & 0xffff;
  const b1 = b >>> 16;
  const p00 = a0 * b0;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const middle = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  return (a1 * b1 + Math.floor(p01 / 65536) + Math.floor(p10 / 65536) + Math.floor(middle / 65536)) >>> 0;
}

/** (wordHi, wordLo) ← (wordHi, wordLo) × (bHi, bLo) mod 2^64. */
function multiplyWord(bHi: number, bLo: number): void {
  const hi = mulHigh32(wordLo, bLo) + Math.imul(wordLo, bHi) + Math.imul(wordHi, bLo);
  wordLo = Math.imul(wordLo, bLo) >>> 0;
  wordHi = hi >>> 0;
}

/** (wordHi, wordLo) ← w ^ (w >> shift), for 0 < shift < 32. */
function xorShiftRight(shift: number): void {
  wordLo = (wordLo ^ ((wordLo >>> shift) | (wordHi << (32 - shift)))) >>> 0;
  wordHi = (wordHi ^ (wordHi >>> shift)) >>> 0;
}

/**
 * The uniform draw of a seeded request at one step: a pure function of `(seed, counter)`, counter-based so a
 * row samples the same token whatever it is batched with, and so a device runtime can reproduce it.
 *
 * Exact definition (all arithmetic on unsigned 64-bit integers, wrapping mod 2^64), which is the
 * `counter`-th output (0-based) of the reference SplitMix64 generator seeded with `seed`:
 *
 * ```
 * x = uint64(seed mod 2^32) + (uint64(counter) + 1) * 0x9E3779B97F4A7C15
 * z = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
 * z = (z ^ (z >> 27)) * 0x94D049BB133111EB
 * z =  z ^ (z >> 31)
 * u = double(z >> 11) * 2^-53            // in [0, 1), exactly representable as a double
 * ```
 *
 * The sampler uses `counter` = number of tokens the sequence has generated so far.
 *
 * @param seed any integer; only its low 32 bits are used (`seed >>> 0`).
 * @param counter a non-negative integer below 2^32.
 * @returns a double in [0, 1).
 */
export function seededUniform(seed: number, counter: number): number {
  // x = seed + (counter + 1) * GAMMA: first (0, counter + 1) × GAMMA, then the 64-bit add with carry.
  const step = counter + 1;
  const stepHi = step >= TWO_POW_32 ? 1 : 0;
  wordHi = stepHi;
  wordLo = step >>> 0;
  multiplyWord(GAMMA_HI, GAMMA_LO);
  const lowSum = wordLo + (seed >>> 0);
  wordLo = lowSum >>> 0;
  wordHi = (wordHi + (lowSum >= TWO_POW_32 ? 1 : 0)) >>> 0;

  xorShiftRight(30);
  multiplyWord(MIX1_HI, MIX1_LO);
  xorShiftRight(27);
  multiplyWord(MIX2_HI, MIX2_LO);
  xorShiftRight(31);

  // z >> 11 as a 53-bit integer: the 32 high bits shifted up by 21, plus the top 21 bits of the low word.
  return (wordHi * 2097152 + (wordLo >>> 11)) * TWO_POW_MINUS_53;
}
