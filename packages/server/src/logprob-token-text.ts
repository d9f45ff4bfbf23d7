import type { Tokenizer } from '@ferrum/interfaces';

const REPLACEMENT = '\uFFFD';

/**
 * Tokens of context kept per sequence. A UTF-8 character has at most 4 bytes, so at most 3 earlier
 * tokens hold the start of the character a token completes (vLLM looks back as far); the fourth is the
 * clean token before them.
 */
const MAX_CONTEXT = 4;

const DECODE_OPTIONS = { skipSpecialTokens: false, cleanUpTokenizationSpaces: false } as const;

/**
 * The text of each token of one sequence as logprobs report it (`token`, and `bytes` are its UTF-8): the
 * text the token adds after the tokens before it, so the texts of a sequence join to its output.
 *
 * - A word-start token keeps its leading space (`▁world` reads ` world`), which decoding the token
 *   alone loses with sentencepiece tokenizers (their decoder strips the first space of a text).
 * - A character split over several tokens (sentencepiece byte fallback `<0xF0>…`, byte-level BPE
 *   pieces) belongs to the token that completes it; the tokens before it report "" rather than U+FFFD.
 *   This is vLLM's rule (`LogprobsProcessor._correct_decoded_token`); OpenAI's `bytes:\xNN` names are
 *   not used. A sequence that ends inside a character reports "" for its last tokens.
 * - Top alternatives are read in the same context as the token sampled at their position.
 * - Special tokens keep their text (`<|im_end|>`); without a tokenizer, vLLM's `token_id:N`.
 */
export class SequenceTokenTexts {
  /** The last tokens of the sequence (prompt, then output), oldest first, and each one's text alone. */
  private readonly contextIds: number[] = [];
  private readonly contextTexts: string[] = [];
  /** Trailing context tokens that end mid-character: they reported "", the completing token reports it. */
  private numPending = 0;
  /** The last {@link textOf} result, which {@link advance} reuses for the sampled token. */
  private last: { tokenId: number; text: string; midCharacter: boolean } | null = null;

  constructor(
    private readonly tokenizer: Tokenizer | null,
    promptTokenIds: readonly number[],
  ) {
    for (const id of promptTokenIds.slice(-MAX_CONTEXT)) this.push(id);
  }

  /** Text `tokenId` would add if it came next. */
  textOf(tokenId: number): string {
    if (!this.tokenizer) return `token_id:${tokenId}`;
    if (this.last?.tokenId !== tokenId) this.last = { tokenId, ...this.read(this.tokenizer, tokenId) };
    return this.last.text;
  }

  /** `tokenId` was sampled: it is context from now on. */
  advance(tokenId: number): void {
    if (!this.tokenizer) return;
    this.textOf(tokenId);
    this.numPending = this.last!.midCharacter ? this.numPending + 1 : 0;
    this.last = null;
    this.push(tokenId);
  }

  /**
   * Decode the window `[clean token, pending tokens…, tokenId]` and drop the clean token's text: what
   * is left is the text `tokenId` adds, the characters it completes included. One clean token is enough
   * context for the decoder steps that look at neighbours (sentencepiece's first-space strip).
   */
  private read(tokenizer: Tokenizer, tokenId: number): { text: string; midCharacter: boolean } {
    const context = this.contextIds;
    const start = Math.max(0, context.length - this.numPending - 1);
    const whole = tokenizer.decode([...context.slice(start), tokenId], DECODE_OPTIONS);
    // Four tokens hold at least four bytes: text still cut after them is invalid UTF-8, not a character
    // in the making, and is reported as it decodes.
    if (whole.endsWith(REPLACEMENT) && this.numPending < MAX_CONTEXT - 1)
      return { text: '', midCharacter: true };
    const clean = context.length - this.numPending;
    const before = clean > start ? this.contextTexts[start] : '';
    return { text: whole.slice(commonPrefixLength(before, whole)), midCharacter: false };
  }

  private push(tokenId: number): void {
    if (!this.tokenizer) return;
    if (this.contextIds.length === MAX_CONTEXT) {
      this.contextIds.shift();
      this.contextTexts.shift();
    }
    this.contextIds.push(tokenId);
    this.contextTexts.push(this.tokenizer.decode([tokenId], DECODE_OPTIONS));
  }
}

/** Length of the longest common prefix (decoding a longer window may rewrite the end of a shorter one). */
function commonPrefixLength(a: string, b: string): number {
  if (b.startsWith(a)) return a.length;
  let i = 0;
  while (i < a.length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}
