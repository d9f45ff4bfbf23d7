import type { Tokenizer } from '@ferrum/interfaces';
import { FerrumError, type PromptInput } from '@ferrum/types';

/** Turn a prompt into checked token ids. Throws FerrumError('invalid_argument') with the reason. */
export function promptTokens(
  prompt: PromptInput,
  tokenizer: Tokenizer | null,
  vocabSize: number,
): Int32Array {
  if ('text' in prompt) {
    if (typeof prompt.text !== 'string')
      throw new FerrumError('invalid_argument', 'prompt text must be a string');
    if (!tokenizer) {
      throw new FerrumError('invalid_argument', 'this model has no tokenizer: send the prompt as token ids');
    }
    const ids = tokenizer.encode(prompt.text, { addSpecialTokens: prompt.addSpecialTokens ?? true });
    if (ids.length === 0) throw new FerrumError('invalid_argument', 'the prompt is empty');
    return Int32Array.from(ids);
  }
  const ids = prompt.tokenIds;
  if (!Array.isArray(ids) || ids.length === 0) {
    throw new FerrumError('invalid_argument', 'prompt token ids must be a non-empty array');
  }
  const out = new Int32Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new FerrumError(
        'invalid_argument',
        `prompt token id ${id} at index ${i} is outside [0, ${vocabSize})`,
      );
    }
    out[i] = id;
  }
  return out;
}
