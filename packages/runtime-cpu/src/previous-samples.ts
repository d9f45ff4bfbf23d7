import { FerrumError, type ForwardBatch } from '@ferrum/types';
import { ROW_GREEDY } from './row-modes.js';

/**
 * The tokens the latest forward sampled, for the next forward's `ForwardBatch.previousTokens`.
 *
 * Two clocks: `stage` runs when `forward()` is called (it checks the batch against the row modes of the
 * forward called just before), `inputTokens` and `record` run when the step itself runs on the executor's
 * queue, where the forward before it has finished (steps run in call order).
 */
export class PreviousSamples {
  /** Row modes of the latest forward called; null before the first and after one refused when called. */
  #stagedModes: Int32Array | null = null;
  /** Tokens the latest forward that ran sampled (natively for ROW_GREEDY rows); false after it failed. */
  #tokens = new Int32Array(0);
  #valid = false;
  #inputs = new Int32Array(0);

  /**
   * Check `batch.previousTokens` against the forward called before (`modes` are this batch's row modes),
   * then make this batch the one the next forward refers to.
   * @throws FerrumError `invalid_argument` when a row or sample index is out of range, or names a row the
   * previous forward left to the host.
   */
  stage(batch: ForwardBatch, modes: Int32Array): void {
    const previous = this.#stagedModes;
    this.#stagedModes = null;
    if (batch.previousTokens !== undefined) checkPreviousTokens(batch, previous);
    this.#stagedModes = modes;
  }

  /** A forward was refused when called: the next one has no samples to refer to. */
  refuse(): void {
    this.#stagedModes = null;
  }

  /**
   * The token ids to run for `batch`: its own, or for `previousTokens` a copy with those rows replaced by
   * what the forward before sampled. The copy is reused by the next step (the queue runs one at a time).
   */
  inputTokens(batch: ForwardBatch): Int32Array {
    const previous = batch.previousTokens;
    const valid = this.#valid;
    this.#valid = false;
    if (previous === undefined) return batch.tokenIds;
    if (!valid) {
      throw new FerrumError('invalid_argument', 'previousTokens: the previous forward failed');
    }
    // Same length as given: the addon checks it against numTokens.
    const length = batch.tokenIds.length;
    if (this.#inputs.length < length) this.#inputs = new Int32Array(length);
    const inputs = this.#inputs.subarray(0, length);
    inputs.set(batch.tokenIds);
    for (let i = 0; i < previous.rows.length; i++) {
      inputs[previous.rows[i]] = this.#tokens[previous.sampleIndices[i]];
    }
    return inputs;
  }

  /** The step that just ran sampled `tokens` (the caller owns that array, so they are copied). */
  record(tokens: Int32Array): void {
    if (this.#tokens.length < tokens.length) this.#tokens = new Int32Array(tokens.length);
    this.#tokens.set(tokens);
    this.#valid = true;
  }
}

function checkPreviousTokens(batch: ForwardBatch, previousModes: Int32Array | null): void {
  const { rows, sampleIndices } = batch.previousTokens!;
  if (rows.length !== sampleIndices.length) {
    throw new FerrumError(
      'invalid_argument',
      `previousTokens has ${rows.length} rows but ${sampleIndices.length} sample indices`,
    );
  }
  const numSamples = previousModes?.length ?? 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const index = sampleIndices[i];
    if (!(row >= 0 && row < batch.numTokens)) {
      throw new FerrumError(
        'invalid_argument',
        `previousTokens.rows[${i}] = ${row} is outside the batch's ${batch.numTokens} rows`,
      );
    }
    if (!(index >= 0 && index < numSamples)) {
      throw new FerrumError(
        'invalid_argument',
        `previousTokens.sampleIndices[${i}] = ${index} is outside the previous forward's ${numSamples} samples`,
      );
    }
    if ((previousModes![index] & ROW_GREEDY) === 0) {
      throw new FerrumError(
        'invalid_argument',
        `previousTokens.sampleIndices[${i}] = ${index}: the previous forward left that row to the host`,
      );
    }
  }
}
