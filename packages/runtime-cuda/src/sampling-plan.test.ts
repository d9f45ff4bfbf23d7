import { type RowSampling, resolveSamplingParams, type SamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { SAMPLE_GREEDY, SamplingPlanner } from './sampling-plan.js';

const VOCAB = 32;
const EOS = 2;

/** A row whose outputs count reads (as the engine's records do): `reads` counts reads of the outputs. */
function row(params: Partial<SamplingParams>, output: readonly number[], reads = { count: 0 }): RowSampling {
  return {
    requestId: 'r',
    params: resolveSamplingParams(params),
    seed: 5,
    promptTokenIds: Int32Array.of(7),
    numOutputTokens: output.length,
    get outputTokenIds() {
      reads.count++;
      return Int32Array.from(output);
    },
    needsHostLogits: false,
  };
}

describe('SamplingPlanner', () => {
  it('packs counts, flags and adjustments, reading outputs only for penalties', () => {
    const planner = new SamplingPlanner(VOCAB, [EOS]);
    const plain = { count: 0 };
    const penalized = { count: 0 };
    const packed = planner.pack([
      row({ temperature: 0, minTokens: 3 }, [4, 4], plain),
      row({ temperature: 0.5, frequencyPenalty: 1 }, [4, 4, 9], penalized),
    ]);
    expect([...packed.rowInts]).toEqual([0, 5, 2, SAMPLE_GREEDY, 0, 5, 3, 0]);
    expect([...packed.rowFloats]).toEqual([0, 1, 0, 1, 0.5, 1, 0, 1]);
    // Row 0: EOS banned until minTokens; row 1: a frequency penalty per output occurrence.
    expect([...packed.adjOffsets]).toEqual([0, 1, 3]);
    expect([...packed.adjIds]).toEqual([EOS, 4, 9]);
    expect([...packed.adjPost]).toEqual([0, -2, -1]);
    // The first entry is made while the arrays grow from empty: its flag must land in the grown array.
    expect([...packed.adjFlags]).toEqual([2, 0, 0]);
    expect(plain.count).toBe(0);
    expect(penalized.count).toBeGreaterThan(0);
  });

  it('hands out the same views while the shape holds, and right ones when it changes', () => {
    const planner = new SamplingPlanner(VOCAB, [EOS]);
    const first = planner.pack([row({ temperature: 0 }, [1])]);
    const { rowInts, adjIds } = first;
    const again = planner.pack([row({ temperature: 0 }, [1, 3])]);
    expect(again.rowInts).toBe(rowInts);
    expect(again.adjIds).toBe(adjIds);
    expect(again.rowInts[2]).toBe(2);
    const rows = Array.from({ length: 300 }, (_, i) =>
      row({ temperature: 0, bannedTokenIds: [i % VOCAB] }, []),
    );
    const grown = planner.pack(rows);
    expect(grown.rowInts.length).toBe(1200);
    expect(grown.adjIds.length).toBe(300);
    expect(grown.adjIds[299]).toBe(299 % VOCAB);
    expect([...grown.adjOffsets.subarray(0, 3)]).toEqual([0, 1, 2]);
  });

  it('keeps the bias and the flag of an entry made while the arrays grow', () => {
    const planner = new SamplingPlanner(VOCAB, [EOS]);
    const packed = planner.pack([row({ temperature: 0, logitBias: { 3: 1.5 }, bannedTokenIds: [5] }, [])]);
    expect([...packed.adjIds]).toEqual([5, 3]);
    expect([...packed.adjFlags]).toEqual([2, 0]);
    const biased = planner.pack([row({ temperature: 0, logitBias: { 3: 1.5 } }, [])]);
    expect([...biased.adjPre]).toEqual([1.5]);
    const fresh = new SamplingPlanner(VOCAB, [EOS]).pack([
      row({ temperature: 0, logitBias: { 3: 1.5 } }, []),
    ]);
    expect([...fresh.adjPre]).toEqual([1.5]);
  });
});
