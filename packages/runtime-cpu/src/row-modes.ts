import { FerrumError, isGreedy, numOutputTokensOf, type RowSampling } from '@ferrum/types';

/** Bit flags per sampled row, as the addon reads them. */
export const ROW_HOST_LOGITS = 1;
export const ROW_GREEDY = 2;

/**
 * True when the runtime's argmax is exactly what the engine's sampling chain would pick: greedy params and
 * nothing that edits logits first (penalties, biases, allowed/banned ids, a pending `minTokens` mask, custom
 * processors), no top-n logprobs to compute on the host, and a sampled-token logprob the runtime gets right.
 */
export function isDeviceGreedy(row: RowSampling): boolean {
  const p = row.params;
  return (
    !row.needsHostLogits &&
    isGreedy(p) &&
    p.repetitionPenalty === 1 &&
    p.presencePenalty === 0 &&
    p.frequencyPenalty === 0 &&
    p.logitBias === null &&
    p.allowedTokenIds === null &&
    p.bannedTokenIds === null &&
    numOutputTokensOf(row) >= p.minTokens &&
    (p.logprobs === null || (p.logprobs === 0 && rawLogprobsMatch(p)))
  );
}

/**
 * The runtime reports the log-softmax of the raw logits. That is the `processed` logprob too at temperature
 * 0, but not for top-k 1 at a temperature, whose processed distribution keeps one token (logprob 0).
 */
function rawLogprobsMatch(p: RowSampling['params']): boolean {
  return p.logprobsMode === 'raw' || p.temperature === 0;
}

/**
 * Fills `modes[0 .. numRows)` and returns how many rows need host logits. Without `sampling` every row
 * returns logits; with it, rows the runtime can decide (see {@link isDeviceGreedy}) are sampled natively
 * and the rest return logits for the engine's sampler.
 */
export function fillRowModes(
  sampling: readonly RowSampling[] | undefined,
  numRows: number,
  modes: Int32Array,
): number {
  if (sampling === undefined) {
    modes.fill(ROW_HOST_LOGITS, 0, numRows);
    return numRows;
  }
  if (sampling.length !== numRows) {
    throw new FerrumError(
      'invalid_argument',
      `batch.sampling has ${sampling.length} entries, expected one per sampled row (${numRows})`,
    );
  }
  let hostRows = 0;
  for (let i = 0; i < numRows; i++) {
    const greedy = isDeviceGreedy(sampling[i]);
    modes[i] = greedy ? ROW_GREEDY : ROW_HOST_LOGITS;
    if (!greedy) hostRows++;
  }
  return hostRows;
}
