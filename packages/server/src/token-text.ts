import type { Tokenizer } from '@ferrum/interfaces';

/**
 * The text of one token decoded alone, special tokens kept (`/tokenize`'s `token_strs`), or vLLM's
 * `token_id:N` when the model has no tokenizer. Logprobs read tokens in context instead
 * (`SequenceTokenTexts`).
 */
export function tokenText(tokenizer: Tokenizer | null, tokenId: number): string {
  return tokenizer ? tokenizer.decode([tokenId], { skipSpecialTokens: false }) : `token_id:${tokenId}`;
}

/** JSON has no -Infinity: masked tokens report vLLM's floor instead. */
export function finiteLogprob(logprob: number): number {
  return Number.isFinite(logprob) ? logprob : -9999;
}
