import type { DecodeStream } from '@ferrum/interfaces';

/** What an incremental decoder needs from a tokenizer. */
export interface PieceDecoder {
  /** The vocabulary string of `id`, or undefined for an id the tokenizer does not know (skipped, as HF does). */
  piece(id: number): string | undefined;
  isSpecial(id: number): boolean;
  /** Decode vocabulary strings to text with the tokenizer's decoder (no clean-up). */
  decodePieces(pieces: string[]): string;
  /**
   * True when text must not be released while `piece` ends the window: sentencepiece byte-fallback tokens
   * (`<0xE4>`), because the decoder turns a whole run of them into U+FFFD when a later byte makes the run
   * invalid UTF-8, changing text that would otherwise already be out.
   */
  holdsBack(piece: string): boolean;
}

const REPLACEMENT_CHARACTER = '\uFFFD';

/**
 * Incremental detokenization with a prefix window (TGI's and vLLM's `decode_token`). Each push decodes
 * only the tokens since the last release, twice: the window up to what was already released (the prefix)
 * and the whole window. The difference is released unless it ends in U+FFFD (an incomplete UTF-8
 * character, from byte-level BPE) or the window ends in a byte-fallback token (see
 * {@link PieceDecoder.holdsBack}). Decoding the prefix again makes the result independent of decoder steps
 * that look at neighbours (sentencepiece's leading-space strip).
 *
 * ```
 * window:  [ already released | held back ]   window[0] is the first token of the last released text
 *            0 ......... released ...... length
 * ```
 */
export class IncrementalDecodeStream implements DecodeStream {
  private readonly window: string[] = [];
  /** Pieces at the start of `window` whose text has been released. */
  private released = 0;
  /** Decoded text of `window[0..released)`, cached while tokens are held back. */
  private prefixText = '';

  constructor(
    private readonly decoder: PieceDecoder,
    private readonly skipSpecialTokens: boolean,
  ) {}

  push(tokenId: number): string {
    if (this.skipSpecialTokens && this.decoder.isSpecial(tokenId)) return '';
    const piece = this.decoder.piece(tokenId);
    if (piece === undefined) return '';
    this.window.push(piece);
    return this.release(false);
  }

  flush(): string {
    return this.window.length > this.released ? this.release(true) : '';
  }

  private release(final: boolean): string {
    const text = this.decoder.decodePieces(this.window);
    if (text.length <= this.prefixText.length) return '';
    if (!final && (text.endsWith(REPLACEMENT_CHARACTER) || this.decoder.holdsBack(this.window.at(-1)!))) {
      return '';
    }
    const delta = text.slice(this.prefixText.length);
    // The next prefix is what this call released: drop the old prefix pieces (in place: `splice` would
    // return them in a new array, and this runs for every token streamed).
    const { window } = this;
    const numKept = window.length - this.released;
    for (let i = 0; i < numKept; i++) window[i] = window[this.released + i];
    window.length = numKept;
    this.released = numKept;
    this.prefixText = this.decoder.decodePieces(this.window);
    return delta;
  }
}
