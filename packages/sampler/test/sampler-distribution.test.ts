import type { Sampler, SamplerRow } from '@ferrum/interfaces';
import type { SamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { createSampler } from '../src/index.js';
import {
  chiSquare,
  chiSquareCritical,
  randomLogits,
  referenceDistribution,
  referenceProcess,
  supportOf,
} from './reference.js';
import { makeRow, type RowSpec } from './rows.js';

const VOCAB = 64;
const DRAWS = 40_000;
const BATCH = 500;

/** Histogram of DRAWS tokens sampled from copies of `logits`, each row with its own seed. */
function histogram(sampler: Sampler, logits: Float32Array, spec: RowSpec): number[] {
  const counts = new Array<number>(VOCAB).fill(0);
  const buffer = new Float32Array(BATCH * VOCAB);
  for (let start = 0; start < DRAWS; start += BATCH) {
    const rows: SamplerRow[] = [];
    for (let r = 0; r < BATCH; r++) {
      buffer.set(logits, r * VOCAB);
      rows.push(makeRow({ ...spec, seed: start + r }));
    }
    const { tokenIds } = sampler.sample(buffer, VOCAB, rows);
    for (const token of tokenIds) counts[token]++;
  }
  return counts;
}

function chiSquareAgainst(observed: number[], probs: number[]): { stat: number; critical: number } {
  const { stat, df } = chiSquare(
    observed,
    probs.map((q) => q * DRAWS),
  );
  return { stat, critical: chiSquareCritical(df) };
}

const settings: [string, RowSpec][] = [
  ['plain temperature 1', { params: {} }],
  ['temperature 0.7 + top-k 20 + top-p 0.9', { params: { temperature: 0.7, topK: 20, topP: 0.9 } }],
  ['temperature 1.5 + min-p 0.1', { params: { temperature: 1.5, minP: 0.1 } }],
  [
    'penalties, bias and banned ids + top-p 0.8',
    {
      params: {
        temperature: 0.9,
        topP: 0.8,
        repetitionPenalty: 1.3,
        frequencyPenalty: 0.4,
        presencePenalty: 0.3,
        logitBias: { 5: 2, 9: -1 },
        bannedTokenIds: [1, 2],
      },
      prompt: [3, 4, 5, 6, 7],
      output: [5, 8, 8, 10],
    },
  ],
];

describe('sampling follows the processed distribution (chi-square, p = 0.001)', () => {
  const logits = randomLogits(VOCAB, 11, 1.5);
  it.each(settings)('%s', (_name, spec) => {
    const row = makeRow(spec);
    const params: SamplingParams = row.context.params;
    const processed = referenceProcess(logits, params, {
      promptTokenIds: spec.prompt ?? [],
      outputTokenIds: spec.output ?? [],
      eosTokenIds: [],
    });
    const expected = referenceDistribution(processed, params).probs;
    const observed = histogram(createSampler(), logits, spec);

    // Nothing outside the support, and counts consistent with the expected distribution.
    expect(supportOf(observed)).toEqual(supportOf(expected).filter((id) => observed[id] > 0));
    const fit = chiSquareAgainst(observed, expected);
    expect(fit.stat).toBeLessThan(fit.critical);

    // The same draws fail against a subtly wrong distribution (temperature off by 15%): the test has power.
    const wrongParams = { ...params, temperature: params.temperature * 1.15 };
    const wrong = chiSquareAgainst(observed, referenceDistribution(processed, wrongParams).probs);
    expect(wrong.stat).toBeGreaterThan(wrong.critical);
  });

  it('draws over successive steps of one seeded request also follow it', () => {
    // Same seed, growing output length: the counter half of the RNG (no penalties, so outputs do not matter).
    const params = { temperature: 0.8, topK: 30 };
    const sampler = createSampler();
    const counts = new Array<number>(VOCAB).fill(0);
    const output = new Array<number>(DRAWS).fill(0);
    const buffer = new Float32Array(VOCAB);
    for (let step = 0; step < DRAWS; step++) {
      buffer.set(logits);
      const row = makeRow({ params, seed: 1234 });
      const context = { ...row.context, outputTokenIds: Int32Array.from(output.slice(0, step % 4000)) };
      const token = sampler.sample(buffer, VOCAB, [{ context, seed: 1234 + Math.floor(step / 4000) }])
        .tokenIds[0];
      counts[token]++;
    }
    const expected = referenceDistribution(Array.from(logits), makeRow({ params }).context.params).probs;
    const fit = chiSquareAgainst(counts, expected);
    expect(fit.stat).toBeLessThan(fit.critical);
  });
});
