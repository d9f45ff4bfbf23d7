import type { SamplingParams } from '@ferrum/types';
import { FerrumError, hasPenalties } from '@ferrum/types';

/**
 * Repetition, frequency and presence penalties of one row, with scratch sized to the vocabulary and reused
 * across calls. Cost per call is O(prompt + output tokens), never O(vocab): only touched entries are reset.
 */
export class PenaltyApplier {
  /** 1 where the token was seen in the prompt (only filled when the repetition penalty is active). */
  private inPrompt = new Uint8Array(0);
  /** Occurrences of each token in the output. */
  private outputCounts = new Int32Array(0);
  /** Distinct tokens touched by this call, so the scratch can be reset sparsely. */
  private touched = new Int32Array(0);

  /**
   * Apply, in vLLM's order and in place on `row`:
   * 1. repetition penalty `r` (Hugging Face semantics) to tokens seen in prompt or output:
   *    `l > 0 ? l / r : l * r`;
   * 2. frequency penalty `f` (OpenAI): `l -= f × count_in_output`;
   * 3. presence penalty `q` (OpenAI): `l -= q` when the token occurs in the output.
   */
  apply(
    row: Float32Array,
    params: SamplingParams,
    promptTokenIds: Int32Array,
    outputTokenIds: Int32Array,
  ): void {
    if (!hasPenalties(params)) return;
    const repetition = params.repetitionPenalty;
    const frequency = params.frequencyPenalty;
    const presence = params.presencePenalty;
    this.ensureCapacity(row.length);
    const numTouched = this.collect(row.length, repetition === 1 ? null : promptTokenIds, outputTokenIds);
    const { inPrompt, outputCounts, touched } = this;
    for (let j = 0; j < numTouched; j++) {
      const id = touched[j];
      let logit = row[id];
      if (repetition !== 1) logit = logit > 0 ? logit / repetition : logit * repetition;
      const count = outputCounts[id];
      if (count > 0) logit -= frequency * count + presence;
      row[id] = logit;
      inPrompt[id] = 0;
      outputCounts[id] = 0;
    }
  }

  /** Fill the scratch; returns how many distinct ids were touched. */
  private collect(vocabSize: number, prompt: Int32Array | null, output: Int32Array): number {
    const { inPrompt, outputCounts, touched } = this;
    let numTouched = 0;
    if (prompt !== null) {
      for (let i = 0; i < prompt.length; i++) {
        const id = prompt[i];
        if (id < 0 || id >= vocabSize) this.resetAndThrow(numTouched, id, vocabSize);
        if (inPrompt[id] === 0) {
          inPrompt[id] = 1;
          touched[numTouched++] = id;
        }
      }
    }
    for (let i = 0; i < output.length; i++) {
      const id = output[i];
      if (id < 0 || id >= vocabSize) this.resetAndThrow(numTouched, id, vocabSize);
      if (outputCounts[id]++ === 0 && inPrompt[id] === 0) touched[numTouched++] = id;
    }
    return numTouched;
  }

  private resetAndThrow(numTouched: number, badId: number, vocabSize: number): never {
    for (let j = 0; j < numTouched; j++) {
      this.inPrompt[this.touched[j]] = 0;
      this.outputCounts[this.touched[j]] = 0;
    }
    throw new FerrumError('invalid_argument', `penalties: token id ${badId} is outside [0, ${vocabSize})`, {
      details: { tokenId: badId, vocabSize },
    });
  }

  private ensureCapacity(vocabSize: number): void {
    if (this.touched.length >= vocabSize) return;
    this.inPrompt = new Uint8Array(vocabSize);
    this.outputCounts = new Int32Array(vocabSize);
    this.touched = new Int32Array(vocabSize);
  }
}
