import type { SequenceRequest } from '@ferrum/interfaces';
import type { RowSampling } from '@ferrum/types';

/** The sampling record of a sequence in one batch buffer; the planner sets `numOutputTokens` each time. */
export interface SamplingRecord extends RowSampling {
  numOutputTokens: number;
}

/**
 * A sampling record over `tokens` (prompt, then outputs), rewritten in place each time its sequence samples
 * in a step built in its batch buffer. Planning touches every sequence of every step, so this allocates
 * nothing then: `outputTokenIds` is a view made when first read at a new count, which only rows with
 * penalties or custom processors do (others read `numOutputTokens`). The getter is an own enumerable
 * property, so a spread copy (`{ ...row }`) takes the view.
 */
export function createSamplingRecord(
  request: SequenceRequest,
  seed: number,
  tokens: Int32Array,
  numPromptTokens: number,
): SamplingRecord {
  let outputs = tokens.subarray(numPromptTokens, numPromptTokens);
  return {
    requestId: request.requestId,
    params: request.sampling,
    seed,
    promptTokenIds: tokens.subarray(0, numPromptTokens),
    needsHostLogits: request.needsHostLogits ?? false,
    numOutputTokens: 0,
    get outputTokenIds(): Int32Array {
      const end = numPromptTokens + this.numOutputTokens;
      if (outputs.length !== this.numOutputTokens) outputs = tokens.subarray(numPromptTokens, end);
      return outputs;
    },
  };
}
