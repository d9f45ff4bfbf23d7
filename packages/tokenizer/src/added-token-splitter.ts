import type { TokenizerJson } from './transformers-pipeline.js';

/** A piece of text to encode, or the id of an added token. */
export type TextSegment = string | number;

/** Pre-tokenizers that treat a piece of text the same wherever it stands in the input. */
const POSITION_FREE_PRE_TOKENIZERS = new Set([
  'ByteLevel',
  'Split',
  'Digits',
  'Whitespace',
  'WhitespaceSplit',
  'Punctuation',
  'BertPreTokenizer',
]);

/**
 * Splits text where the tokenizer splits it first: at its added tokens (`<|im_start|>`, `<|eot_id|>`, ...),
 * leftmost-longest, as the Rust tokenizer's added vocabulary does. The pieces between are then normalized,
 * pre-tokenized and modelled each on its own, so encoding them one by one gives the ids of the whole.
 *
 * Made only for tokenizers where that holds by construction ({@link AddedTokenSplitter.of}); `SegmentedEncoder`
 * still checks its first results against whole encodes.
 */
export class AddedTokenSplitter {
  private constructor(
    private readonly pattern: RegExp,
    private readonly ids: ReadonlyMap<string, number>,
  ) {}

  /**
   * The splitter of a `tokenizer.json` (after any rewrite this package applies), or null when pieces may
   * not be encoded apart: no added tokens; an added token that strips whitespace around it, matches single
   * words only, or matches normalized text under a normalizer; a pre-tokenizer that looks at where a piece
   * stands (`Metaspace` with `prepend_scheme: "first"`, or one this list does not know); BPE dropout.
   */
  static of(json: TokenizerJson): AddedTokenSplitter | null {
    const added = (json.added_tokens ?? []).filter((token) => token.content !== '');
    if (added.length === 0 || json.model?.dropout) return null;
    const hasNormalizer = json.normalizer !== undefined && json.normalizer !== null;
    const plain = (token: (typeof added)[number]) =>
      !token.lstrip && !token.rstrip && !token.single_word && !(token.normalized && hasNormalizer);
    if (!added.every(plain) || !isPositionFree(json.pre_tokenizer)) return null;
    const ids = new Map<string, number>();
    for (const token of added) if (!ids.has(token.content)) ids.set(token.content, token.id);
    // Longest first: at a given position the first alternative that matches wins.
    const contents = [...ids.keys()].sort((a, b) => b.length - a.length);
    const pattern = new RegExp(contents.map(escapeRegExp).join('|'), 'gu');
    return new AddedTokenSplitter(pattern, ids);
  }

  /** `text` as its pieces between added tokens and the added tokens' ids, in order; no empty pieces. */
  split(text: string): TextSegment[] {
    const segments: TextSegment[] = [];
    let end = 0;
    this.pattern.lastIndex = 0;
    for (let match = this.pattern.exec(text); match !== null; match = this.pattern.exec(text)) {
      if (match.index > end) segments.push(text.slice(end, match.index));
      segments.push(this.ids.get(match[0]) as number);
      end = match.index + match[0].length;
    }
    if (end < text.length) segments.push(text.slice(end));
    return segments;
  }
}

function isPositionFree(preTokenizer: unknown): boolean {
  if (preTokenizer === undefined || preTokenizer === null) return true;
  const { type, pretokenizers, prepend_scheme } = preTokenizer as {
    type?: unknown;
    pretokenizers?: unknown;
    prepend_scheme?: unknown;
  };
  if (type === 'Sequence') return Array.isArray(pretokenizers) && pretokenizers.every(isPositionFree);
  if (type === 'Metaspace') return prepend_scheme === 'always' || prepend_scheme === 'never';
  return typeof type === 'string' && POSITION_FREE_PRE_TOKENIZERS.has(type);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
