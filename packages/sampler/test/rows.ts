import type { SamplerRow } from '@ferrum/interfaces';
import { resolveSamplingParams, type SamplingParams } from '@ferrum/types';

/** Options of {@link makeRow}. */
export interface RowSpec {
  readonly params?: Partial<SamplingParams>;
  readonly prompt?: readonly number[];
  readonly output?: readonly number[];
  readonly eos?: readonly number[];
  readonly seed?: number;
  readonly requestId?: string;
}

/** A sampler row from plain values. */
export function makeRow(spec: RowSpec = {}): SamplerRow {
  return {
    context: {
      requestId: spec.requestId ?? 'request',
      params: resolveSamplingParams(spec.params),
      promptTokenIds: Int32Array.from(spec.prompt ?? []),
      outputTokenIds: Int32Array.from(spec.output ?? []),
      eosTokenIds: spec.eos,
    },
    seed: spec.seed ?? 0,
  };
}

/** Concatenate rows of logits into one R × V buffer (copies, so the inputs stay untouched). */
export function stackRows(rows: readonly Float32Array[]): Float32Array {
  const vocabSize = rows[0].length;
  const out = new Float32Array(rows.length * vocabSize);
  rows.forEach((row, r) => {
    out.set(row, r * vocabSize);
  });
  return out;
}
