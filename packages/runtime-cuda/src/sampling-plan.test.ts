import {
  MAX_DEVICE_TOP_LOGPROBS,
  type RowSampling,
  resolveSamplingParams,
  type SamplingParams,
} from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import {
  SAMPLE_COUNT_INPUT,
  SAMPLE_GREEDY,
  SAMPLE_SKIP,
  SAMPLE_TOP_SHIFT,
  SamplingPlanner,
} from './sampling-plan.js';

const VOCAB = 32;
const EOS = 2;
const MAX_TOKENS = 512;

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
    const planner = new SamplingPlanner(VOCAB, [EOS], MAX_TOKENS);
    const plain = { count: 0 };
    const penalized = { count: 0 };
    const packed = planner.pack(
      [
        row({ temperature: 0, minTokens: 3 }, [4, 4], plain),
        row({ temperature: 0.5, frequencyPenalty: 1 }, [4, 4, 9], penalized),
      ],
      Int32Array.of(0, 1),
    );
    expect([...packed.rowInts]).toEqual([0, 5, 2, SAMPLE_GREEDY, 0, 5, 3, 0]);
    expect([...packed.rowFloats]).toEqual([0, 1, 0, 1, 0, 0, 0.5, 1, 0, 1, 0, 1]);
    // Row 0: EOS banned until minTokens; row 1: a frequency penalty per output occurrence.
    expect([...packed.adjOffsets]).toEqual([0, 1, 3]);
    expect([...packed.adjIds]).toEqual([EOS, 4, 9]);
    expect([...packed.adjPost]).toEqual([0, -2, -1]);
    // The first entry is made while the arrays grow from empty: its flag must land in the grown array. Row 1's
    // entries are outputs (ADJ_IN_OUTPUT, 4).
    expect([...packed.adjFlags]).toEqual([2, 4, 4]);
    expect(plain.count).toBe(0);
    expect(penalized.count).toBeGreaterThan(0);
  });

  it('hands out the same views while the shape holds, and right ones when it changes', () => {
    const planner = new SamplingPlanner(VOCAB, [EOS], MAX_TOKENS);
    const first = planner.pack([row({ temperature: 0 }, [1])], Int32Array.of(0));
    const { rowInts, adjIds } = first;
    const again = planner.pack([row({ temperature: 0 }, [1, 3])], Int32Array.of(0));
    expect(again.rowInts).toBe(rowInts);
    expect(again.adjIds).toBe(adjIds);
    expect(again.rowInts[2]).toBe(2);
    const rows = Array.from({ length: 300 }, (_, i) =>
      row({ temperature: 0, bannedTokenIds: [i % VOCAB] }, []),
    );
    const grown = planner.pack(
      rows,
      Int32Array.from(rows, (_, i) => i),
    );
    expect(grown.rowInts.length).toBe(1200);
    expect(grown.adjIds.length).toBe(300);
    expect(grown.adjIds[299]).toBe(299 % VOCAB);
    expect([...grown.adjOffsets.subarray(0, 3)]).toEqual([0, 1, 2]);
  });

  it('leaves the newest output of a placeholder row with penalties to the device, and counts every other', async () => {
    const planner = new SamplingPlanner(VOCAB, [EOS], MAX_TOKENS);
    const penalties = {
      temperature: 0,
      repetitionPenalty: 1.5,
      presencePenalty: 0.5,
      frequencyPenalty: 0.25,
    };
    // Batch rows 3 and 5 hold placeholders (their value, 30, is not known yet); row 4 does not.
    const packed = planner.pack(
      [row(penalties, [4, 9, 30]), row({ temperature: 0 }, [11, 30]), row(penalties, [4, 30])],
      Int32Array.of(3, 5, 4),
      { rows: Int32Array.of(3, 5) },
    );
    const flags = [0, 1, 2].map((r) => packed.rowInts[r * 4 + 3]);
    expect(flags).toEqual([SAMPLE_GREEDY | SAMPLE_COUNT_INPUT, SAMPLE_GREEDY, SAMPLE_GREEDY]);
    expect([...packed.rowFloats.subarray(0, 6)]).toEqual([0, 1, 0, 1.5, 0.5, 0.25]);
    // Row 0: the prompt's 7 and the outputs 4 and 9, not its placeholder; row 1: nothing; row 2: 7, 4 and 30.
    expect([...packed.adjOffsets]).toEqual([0, 3, 3, 6]);
    expect([...packed.adjIds]).toEqual([7, 4, 9, 7, 4, 30]);
    expect([...packed.adjPost]).toEqual([0, -0.75, -0.75, 0, -0.75, -0.75]);
    // The ids among the counted outputs carry ADJ_IN_OUTPUT (4) beside the repetition bit (1).
    expect([...packed.adjFlags]).toEqual([1, 5, 5, 1, 5, 5]);
  });

  it('forgets the placeholder rows of a batch after its pack, also when that pack throws', () => {
    const planner = new SamplingPlanner(VOCAB, [EOS], MAX_TOKENS);
    const penalized = row({ temperature: 0, repetitionPenalty: 1.5 }, [4, 30]);
    const previousTokens = { rows: Int32Array.of(0) };
    expect(planner.pack([penalized], Int32Array.of(0), previousTokens).rowInts[3]).toBe(
      SAMPLE_GREEDY | SAMPLE_COUNT_INPUT,
    );
    expect(planner.pack([penalized], Int32Array.of(0)).rowInts[3]).toBe(SAMPLE_GREEDY);
    const bad = row({ temperature: 0, bannedTokenIds: [VOCAB] }, []);
    expect(() => planner.pack([bad], Int32Array.of(0), previousTokens)).toThrow(/outside/);
    expect(planner.pack([penalized], Int32Array.of(0)).rowInts[3]).toBe(SAMPLE_GREEDY);
  });

  it('takes placeholder rows outside the batch as none, leaving them to the runtime to refuse', () => {
    const planner = new SamplingPlanner(VOCAB, [EOS], MAX_TOKENS);
    const packed = planner.pack(
      [row({ temperature: 0, repetitionPenalty: 1.5 }, [4, 30])],
      Int32Array.of(MAX_TOKENS + 3),
      { rows: Int32Array.of(-1, MAX_TOKENS + 3, 2 ** 30) },
    );
    expect(packed.rowInts[3]).toBe(SAMPLE_GREEDY);
    expect([...packed.adjIds]).toEqual([7, 4, 30]);
  });

  it('keeps the bias and the flag of an entry made while the arrays grow', () => {
    const planner = new SamplingPlanner(VOCAB, [EOS], MAX_TOKENS);
    const one = Int32Array.of(0);
    const packed = planner.pack(
      [row({ temperature: 0, logitBias: { 3: 1.5 }, bannedTokenIds: [5] }, [])],
      one,
    );
    expect([...packed.adjIds]).toEqual([5, 3]);
    expect([...packed.adjFlags]).toEqual([2, 0]);
    const fresh = new SamplingPlanner(VOCAB, [EOS], MAX_TOKENS).pack(
      [row({ temperature: 0, logitBias: { 3: 1.5 } }, [])],
      one,
    );
    expect([...fresh.adjPre]).toEqual([1.5]);
  });

  it('samples rows with up to the device limit of alternatives on the device; more go to the host', () => {
    const planner = new SamplingPlanner(VOCAB, [EOS], MAX_TOKENS);
    const packed = planner.pack(
      [
        row({ temperature: 0, logprobs: 0, repetitionPenalty: 1.5 }, [4]),
        row({ temperature: 0, logprobs: 3, repetitionPenalty: 1.5 }, [4]),
        row({ temperature: 0, logprobs: MAX_DEVICE_TOP_LOGPROBS, repetitionPenalty: 1.5 }, [4]),
        row({ temperature: 0, logprobs: MAX_DEVICE_TOP_LOGPROBS + 1, repetitionPenalty: 1.5 }, [4]),
      ],
      Int32Array.of(0, 1, 2, 3),
    );
    expect([packed.rowInts[3], packed.rowInts[7], packed.rowInts[11], packed.rowInts[15]]).toEqual([
      SAMPLE_GREEDY,
      SAMPLE_GREEDY | (3 << SAMPLE_TOP_SHIFT),
      SAMPLE_GREEDY | (20 << SAMPLE_TOP_SHIFT),
      SAMPLE_GREEDY | SAMPLE_SKIP,
    ]);
    // The host row gets no adjustments: the engine's sampler applies the whole chain to its logits.
    expect([...packed.adjOffsets]).toEqual([0, 2, 4, 6, 6]);
  });
});
