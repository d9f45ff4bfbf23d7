import type { Tokenizer } from '@ferrum/interfaces';

/**
 * `/tokenize`'s `token_strs` entry of one token: its vocabulary piece (`Ġworld`), as vLLM returns
 * `convert_ids_to_tokens`; the token decoded alone, special tokens kept, from a tokenizer without pieces; or
 * vLLM's `token_id:N` when the model has no tokenizer. Logprobs read tokens in context instead
 * (`SequenceTokenTexts`).
 */
export function tokenString(tokenizer: Tokenizer | null, tokenId: number): string {
  if (!tokenizer) return `token_id:${tokenId}`;
  return tokenizer.idToToken?.(tokenId) ?? tokenizer.decode([tokenId], { skipSpecialTokens: false });
}

/** JSON has no -Infinity: masked tokens report vLLM's floor instead. */
export function finiteLogprob(logprob: number): number {
  return Number.isFinite(logprob) ? logprob : -9999;
}
