/**
 * Naive reference implementations used by the tests: plain number arrays, full sorts, no scratch, written
 * from the definitions (vLLM v1 order) rather than from the sampler's code.
 */
import type { SamplingParams } from '@ferrum/types';
import { seededRandom } from '@ferrum/types';

/** Gaussian-ish logits (sum of uniforms), scaled. */
export function randomLogits(vocabSize: number, seed: number, scale = 3): Float32Array {
  const next = seededRandom(seed);
  const out = new Float32Array(vocabSize);
  for (let i = 0; i < vocabSize; i++) out[i] = (next() + next() + next() + next() - 2) * scale;
  return out;
}

export function logSoftmax(values: readonly number[]): number[] {
  const finite = values.filter((v) => v > Number.NEGATIVE_INFINITY);
  const max = finite.reduce((m, v) => Math.max(m, v), Number.NEGATIVE_INFINITY);
  const lse = max + Math.log(finite.reduce((s, v) => s + Math.exp(v - max), 0));
  return values.map((v) => v - lse);
}

export function softmax(values: readonly number[]): number[] {
  return logSoftmax(values).map(Math.exp);
}

export interface ReferenceContext {
  readonly promptTokenIds: readonly number[];
  readonly outputTokenIds: readonly number[];
  readonly eosTokenIds: readonly number[];
}

/** Steps before temperature: masks, min tokens, bias, penalties (float64, then rounded like a Float32Array). */
export function referenceProcess(
  logits: ArrayLike<number>,
  p: SamplingParams,
  ctx: ReferenceContext,
): number[] {
  let l = Array.from(logits);
  const ninf = Number.NEGATIVE_INFINITY;
  if (p.allowedTokenIds) l = l.map((v, i) => (p.allowedTokenIds!.includes(i) ? v : ninf));
  for (const id of p.bannedTokenIds ?? []) l[id] = ninf;
  if (ctx.outputTokenIds.length < p.minTokens) {
    for (const id of p.stopTokenIds) l[id] = ninf;
    if (!p.ignoreEos) for (const id of ctx.eosTokenIds) l[id] = ninf;
  }
  for (const [key, bias] of Object.entries(p.logitBias ?? {}))
    l[Number(key)] = Math.fround(l[Number(key)] + bias);
  const seen = new Set([...ctx.promptTokenIds, ...ctx.outputTokenIds]);
  const counts = new Map<number, number>();
  for (const id of ctx.outputTokenIds) counts.set(id, (counts.get(id) ?? 0) + 1);
  return l.map((v, i) => {
    let x = v;
    if (seen.has(i) && p.repetitionPenalty !== 1)
      x = x > 0 ? x / p.repetitionPenalty : x * p.repetitionPenalty;
    const c = counts.get(i) ?? 0;
    x = x - p.frequencyPenalty * c - (c > 0 ? p.presencePenalty : 0);
    return Math.fround(x);
  });
}

/** Result of {@link referenceDistribution}: probabilities and how close the input came to a boundary. */
export interface ReferenceDistribution {
  readonly probs: number[];
  /** Log-probabilities (log-softmax of the truncated, temperature-scaled logits). */
  readonly logprobs: number[];
  /** Smallest distance of any keep/drop decision to its threshold (decisions closer are ambiguous). */
  readonly margin: number;
}

/**
 * Temperature, min-p, top-k, top-p (renormalized after the first two) over processed logits, temperature > 0.
 * Top-k keeps ties at the k-th value, except top-k 1, which keeps the first maximum only.
 */
export function referenceDistribution(
  processed: readonly number[],
  p: SamplingParams,
): ReferenceDistribution {
  const ninf = Number.NEGATIVE_INFINITY;
  let margin = Number.POSITIVE_INFINITY;
  let scaled = processed.map((v) => v / p.temperature);
  if (p.minP > 0) {
    const probs = softmax(scaled);
    const pmax = probs.reduce((m, v) => Math.max(m, v), 0);
    scaled = scaled.map((v, i) => {
      if (v === ninf) return v;
      margin = Math.min(margin, Math.abs(probs[i] / pmax - p.minP));
      return probs[i] >= p.minP * pmax ? v : ninf;
    });
  }
  const finiteCount = scaled.filter((v) => v > ninf).length;
  if (p.topK === 1) {
    // Top-k 1 is greedy: only the first maximum survives, even among ties.
    const first = scaled.indexOf(Math.max(...scaled));
    scaled = scaled.map((v, i) => (i === first ? v : ninf));
  } else if (p.topK > 0 && p.topK < finiteCount) {
    const kth = [...scaled].sort((a, b) => b - a)[p.topK - 1];
    scaled = scaled.map((v) => (v >= kth ? v : ninf));
  }
  if (p.topP < 1) {
    const probs = softmax(scaled);
    const order = probs.map((_, i) => i).sort((a, b) => scaled[b] - scaled[a] || a - b);
    const keep = new Set<number>();
    let above = 0;
    for (let q = 0; q < order.length; ) {
      const value = scaled[order[q]];
      if (value === ninf) break;
      let group = 0;
      const members: number[] = [];
      while (q < order.length && scaled[order[q]] === value) {
        group += probs[order[q]];
        members.push(order[q++]);
      }
      margin = Math.min(margin, Math.abs(above - p.topP));
      if (above < p.topP) for (const m of members) keep.add(m);
      above += group;
    }
    scaled = scaled.map((v, i) => (keep.has(i) ? v : ninf));
  }
  return { probs: softmax(scaled), logprobs: logSoftmax(scaled), margin };
}

/** Ids with non-zero probability, ascending. */
export function supportOf(probs: readonly number[]): number[] {
  return probs.flatMap((q, i) => (q > 0 ? [i] : []));
}

/** Pearson's chi-square statistic, pooling bins whose expected count is below 5. */
export function chiSquare(
  observed: readonly number[],
  expected: readonly number[],
): { stat: number; df: number } {
  let stat = 0;
  let bins = 0;
  let pooledObserved = 0;
  let pooledExpected = 0;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] < 5) {
      pooledObserved += observed[i];
      pooledExpected += expected[i];
    } else {
      stat += (observed[i] - expected[i]) ** 2 / expected[i];
      bins++;
    }
  }
  if (pooledExpected > 0) {
    stat += (pooledObserved - pooledExpected) ** 2 / pooledExpected;
    bins++;
  }
  return { stat, df: bins - 1 };
}

/** Upper 0.1% critical value of chi-square with `df` degrees of freedom (Wilson–Hilferty). */
export function chiSquareCritical(df: number): number {
  const z = 3.0902; // standard normal 99.9% quantile
  const a = 2 / (9 * df);
  return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

/** |actual - expected| within `tolerance` relative to max(1, |expected|). */
export function isClose(actual: number, expected: number, tolerance: number): boolean {
  return Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected));
}
