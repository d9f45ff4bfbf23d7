import type { Tokenizer } from '@ferrum/interfaces';
import { encodeText } from './encode-text.js';
import { invalidRequest } from './openai-error.js';
import type { CompletionRequest } from './schemas/completion-request.js';

/**
 * The prompts of a `/v1/completions` request as token ids: text is tokenized here (so the route knows
 * prompt lengths), ids are checked against the vocabulary.
 */
export async function completionPrompts(
  prompt: CompletionRequest['prompt'],
  tokenizer: Tokenizer | null,
  vocabSize: number,
  addSpecialTokens: boolean,
): Promise<number[][]> {
  const list: (string | number[])[] =
    typeof prompt === 'string' || typeof prompt[0] === 'number'
      ? [prompt as string | number[]]
      : (prompt as (string | number[])[]);
  return Promise.all(
    list.map(async (item, i) => {
      const param = list.length === 1 ? 'prompt' : `prompt[${i}]`;
      if (typeof item !== 'string') return checkIds(item, vocabSize, param);
      if (!tokenizer)
        throw invalidRequest('this model has no tokenizer: send the prompt as token ids', param);
      const ids = await encodeText(tokenizer, item, addSpecialTokens);
      if (ids.length === 0) throw invalidRequest('the prompt is empty', param);
      return ids;
    }),
  );
}

function checkIds(ids: number[], vocabSize: number, param: string): number[] {
  const bad = ids.findIndex((id) => id >= vocabSize);
  if (bad >= 0)
    throw invalidRequest(`${param}[${bad}] = ${ids[bad]} is outside the vocabulary [0, ${vocabSize})`, param);
  return ids;
}
