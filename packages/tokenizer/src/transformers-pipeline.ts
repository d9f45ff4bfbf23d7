import { FerrumError } from '@ferrum/types';
import type { TokenizerConfig } from './tokenizer-config.js';

/** The slice of a `tokenizer.json` this package reads or rewrites. */
export interface TokenizerJson {
  added_tokens?: {
    id: number;
    content: string;
    special: boolean;
    lstrip?: boolean;
    rstrip?: boolean;
    single_word?: boolean;
    normalized?: boolean;
  }[];
  normalizer?: unknown;
  pre_tokenizer?: unknown;
  post_processor?: unknown;
  decoder?: unknown;
  model?: { type?: string; byte_fallback?: boolean; vocab?: unknown; dropout?: number | null };
  [key: string]: unknown;
}

/** Classes transformers 5 rebuilds as a sentencepiece-style BPE whatever `tokenizer.json` says. */
const LLAMA_CLASSES = new Set(['LlamaTokenizer', 'LlamaTokenizerFast']);
const SPIECE_UNDERLINE = '\u2581';

/** Whether {@link applyTransformersPipeline} may change a `tokenizer.json` of this configuration. */
export function mayRewritePipeline(config: TokenizerConfig): boolean {
  return LLAMA_CLASSES.has(config.tokenizerClass ?? '');
}

/**
 * Make a `tokenizer.json` behave as transformers 5 loads it. transformers 5 keeps the file's vocabulary
 * and merges but, for `LlamaTokenizer` (Llama 2, Mistral, TinyLlama), builds the rest itself: no
 * normalizer, a `Metaspace` pre-tokenizer whose prepend scheme follows `add_prefix_space` and `legacy`
 * (`first` when `legacy` is false, so text after a special token gets no `▁`), and a BOS/EOS template
 * from `add_bos_token` / `add_eos_token`. Byte-level files that merely carry that class name (some
 * Llama 3 fine-tunes) keep their own pipeline. Returns whether `json` was changed (in place).
 *
 * @throws FerrumError `invalid_checkpoint` when a BOS/EOS token to add is not in the vocabulary.
 */
export function applyTransformersPipeline(json: TokenizerJson, config: TokenizerConfig): boolean {
  if (!mayRewritePipeline(config)) return false;
  if (json.model?.type !== 'BPE' || json.model.byte_fallback !== true) return false;
  const addPrefixSpace = config.addPrefixSpace ?? true;
  const prependScheme = !addPrefixSpace ? 'never' : config.legacy === false ? 'first' : 'always';
  json.normalizer = null;
  json.pre_tokenizer = {
    type: 'Metaspace',
    replacement: SPIECE_UNDERLINE,
    prepend_scheme: prependScheme,
    split: false,
  };
  const decoders: unknown[] = [
    { type: 'Replace', pattern: { String: SPIECE_UNDERLINE }, content: ' ' },
    { type: 'ByteFallback' },
    { type: 'Fuse' },
  ];
  if (addPrefixSpace) decoders.push({ type: 'Strip', content: ' ', start: 1, stop: 0 });
  json.decoder = { type: 'Sequence', decoders };
  json.post_processor = bosEosTemplate(
    json,
    (config.addBosToken ?? true) ? config.specialTokens.bos_token : null,
    (config.addEosToken ?? false) ? config.specialTokens.eos_token : null,
  );
  return true;
}

/** A `TemplateProcessing` post-processor: `[bos] $A [eos]`, and `[bos] $A [eos] [bos] $B [eos]` for pairs. */
function bosEosTemplate(json: TokenizerJson, bos: string | null | undefined, eos: string | null | undefined) {
  const specialTokens: Record<string, { id: string; ids: number[]; tokens: string[] }> = {};
  const piece = (token: string | null | undefined, typeId: number) => {
    if (!token) return [];
    specialTokens[token] = { id: token, ids: [tokenId(json, token)], tokens: [token] };
    return [{ SpecialToken: { id: token, type_id: typeId } }];
  };
  const sequence = (id: 'A' | 'B', typeId: number) => [
    ...piece(bos, typeId),
    { Sequence: { id, type_id: typeId } },
    ...piece(eos, typeId),
  ];
  return {
    type: 'TemplateProcessing',
    single: sequence('A', 0),
    pair: [...sequence('A', 0), ...sequence('B', 1)],
    special_tokens: specialTokens,
  };
}

function tokenId(json: TokenizerJson, token: string): number {
  const added = json.added_tokens?.find((entry) => entry.content === token);
  if (added) return added.id;
  const vocab = json.model?.vocab;
  const id = vocab && typeof vocab === 'object' ? (vocab as Record<string, unknown>)[token] : undefined;
  if (typeof id === 'number') return id;
  throw new FerrumError(
    'invalid_checkpoint',
    `special token ${JSON.stringify(token)} is not in the vocabulary`,
  );
}

/** Whether a `tokenizer.json` decoder (possibly a `Sequence`) has a `ByteFallback` step. */
export function hasByteFallbackDecoder(decoder: unknown): boolean {
  if (typeof decoder !== 'object' || decoder === null) return false;
  const { type, decoders } = decoder as { type?: unknown; decoders?: unknown };
  if (type === 'ByteFallback') return true;
  return type === 'Sequence' && Array.isArray(decoders) && decoders.some(hasByteFallbackDecoder);
}
