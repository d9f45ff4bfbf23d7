import { loadModelConfig } from '@ferrum/models';
import { FerrumError } from '@ferrum/types';

/**
 * The token ids of `--prompt-ids` ("1, 2,3"): each a plain non-negative decimal integer, spaces allowed
 * around it.
 * @throws FerrumError `invalid_argument` for anything else, an empty list or an empty item included.
 */
export function parsePromptIds(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim());
  // Number('') is 0: an empty list or an empty item must not turn into token 0.
  if (parts.some((part) => !/^\d+$/.test(part))) {
    throw new FerrumError(
      'invalid_argument',
      `--prompt-ids must be comma-separated token ids, got "${text}"`,
    );
  }
  return parts.map(Number);
}

/**
 * Check `ids` against the vocabulary size in `modelDir`'s config.json, so that a bad id fails in
 * milliseconds rather than after the weights load (the engine checks again, the same way).
 * @throws FerrumError `invalid_argument` naming the first id outside `[0, vocab_size)`, and whatever
 *   `loadModelConfig` throws for a missing or unreadable config.
 */
export async function checkPromptIdsInVocabulary(ids: readonly number[], modelDir: string): Promise<void> {
  const { vocabSize } = await loadModelConfig(modelDir);
  const index = ids.findIndex((id) => id >= vocabSize);
  if (index >= 0) {
    throw new FerrumError(
      'invalid_argument',
      `--prompt-ids: token id ${ids[index]} at index ${index} is outside the model's vocabulary [0, ${vocabSize})`,
      { details: { tokenId: ids[index], index, vocabSize } },
    );
  }
}
