/** The replacements of transformers' `clean_up_tokenization`, applied one after another in this order. */
const CLEAN_UPS: readonly (readonly [string, string])[] = [
  [' .', '.'],
  [' ?', '?'],
  [' !', '!'],
  [' ,', ','],
  [" ' ", "'"],
  [" n't", "n't"],
  [" 'm", "'m"],
  [" 's", "'s"],
  [" 've", "'ve"],
  [" 're", "'re"],
];

/**
 * transformers' `clean_up_tokenization`: removes the space before punctuation and English contractions
 * that old word-level tokenizers left. `decode` applies it when `clean_up_tokenization_spaces` is set
 * (GPT-2, Llama 3); streaming never does, as in vLLM.
 */
export function cleanUpTokenization(text: string): string {
  let out = text;
  for (const [from, to] of CLEAN_UPS) out = out.replaceAll(from, to);
  return out;
}
