import type { ChatTemplateOptions, DecodeStream, Tokenizer } from '@ferrum/interfaces';
import { type ChatMessage, FerrumError, type SamplingParams } from '@ferrum/types';
import type { Decoder } from 'tokenizers';
import type { AddedTokenSplitter } from './added-token-splitter.js';
import type { ChatTemplateRenderer } from './chat-template.js';
import { cleanUpTokenization } from './clean-up-tokenization.js';
import { IncrementalDecodeStream, type PieceDecoder } from './decode-stream.js';
import type { EncodeWorker } from './encode-worker.js';
import { SegmentedEncoder } from './segmented-encoder.js';
import type { Vocabulary } from './vocabulary.js';

/** Options of {@link HfTokenizer.encode}. */
export interface EncodeOptions {
  /** Add the model's BOS/EOS as its post-processor says (transformers' `add_special_tokens`). Default true. */
  readonly addSpecialTokens?: boolean;
}

/** Options of {@link HfTokenizer.decode}. */
export interface DecodeOptions {
  /** Leave out special tokens (transformers' `skip_special_tokens`). Default false. */
  readonly skipSpecialTokens?: boolean;
  /** transformers' `clean_up_tokenization_spaces`; default from `tokenizer_config.json`. */
  readonly cleanUpTokenizationSpaces?: boolean;
}

/** Everything `loadTokenizer` assembles for an {@link HfTokenizer} (internal). */
export interface HfTokenizerParts {
  /** Worker thread that owns the native tokenizer and encodes. */
  readonly encoder: EncodeWorker;
  /** Where the tokenizer splits text before anything else, when its pieces may be encoded apart. */
  readonly addedTokenSplitter?: AddedTokenSplitter | null;
  /** The native decoder of `tokenizer.json` (null: tokens are joined with spaces). */
  readonly decoder: Decoder | null;
  readonly vocabulary: Vocabulary;
  readonly eosTokenIds: readonly number[];
  readonly bosTokenId: number | null;
  readonly modelMaxLength: number | null;
  readonly cleanUpTokenizationSpaces: boolean;
  /** The decoder has a `ByteFallback` step (sentencepiece `<0xXX>` tokens). */
  readonly byteFallback: boolean;
  readonly samplingDefaults: Partial<SamplingParams>;
  readonly chatTemplates: ChatTemplateRenderer;
}

/**
 * A Hugging Face tokenizer (`tokenizer.json` through the `tokenizers` binding) with the model's
 * configuration, behaving as transformers 5 does. Create it with `loadTokenizer`; call
 * {@link HfTokenizer.dispose} when done to stop its encode worker.
 */
export class HfTokenizer implements Tokenizer {
  readonly specificationVersion = 'v1' as const;
  /** Vocabulary size including added tokens (`len(tokenizer)` in transformers). */
  readonly vocabSize: number;
  /** The tokenizer's EOS id followed by the other EOS ids of `generation_config.json`. */
  readonly eosTokenIds: readonly number[];
  readonly bosTokenId: number | null;
  /** `model_max_length` of `tokenizer_config.json`, when it names a real limit. */
  readonly modelMaxLength: number | null;
  /** Default sampling values of `generation_config.json` (only the keys it sets). */
  readonly samplingDefaults: Partial<SamplingParams>;

  private readonly encoder: EncodeWorker;
  /** Encodes text without added special tokens a cached piece at a time (null: whole texts only). */
  private readonly segmented: SegmentedEncoder | null;
  private readonly decoder: Decoder | null;
  /** Vocabulary strings by id (holes for unused ids). */
  private readonly pieces: readonly (string | undefined)[];
  private readonly special: Uint8Array;
  private readonly cleanUp: boolean;
  private readonly templates: ChatTemplateRenderer;
  private readonly pieceDecoder: PieceDecoder;
  private idsByPiece: Map<string, number> | null = null;

  constructor(parts: HfTokenizerParts) {
    this.encoder = parts.encoder;
    const splitter = parts.addedTokenSplitter ?? null;
    this.segmented = splitter && new SegmentedEncoder(splitter, parts.encoder);
    this.decoder = parts.decoder;
    this.vocabSize = parts.vocabulary.size;
    this.pieces = parts.vocabulary.pieces;
    this.special = parts.vocabulary.special;
    this.eosTokenIds = parts.eosTokenIds;
    this.bosTokenId = parts.bosTokenId;
    this.modelMaxLength = parts.modelMaxLength;
    this.samplingDefaults = parts.samplingDefaults;
    this.cleanUp = parts.cleanUpTokenizationSpaces;
    this.templates = parts.chatTemplates;
    this.pieceDecoder = {
      piece: (id) => this.pieces[id],
      isSpecial: (id) => this.special[id] === 1,
      decodePieces: (pieces) => this.decodePieces(pieces),
      holdsBack: parts.byteFallback ? isByteToken : () => false,
    };
  }

  /** Names of the chat templates (`default`, and e.g. `tool_use`). */
  get chatTemplateNames(): string[] {
    return this.templates.names;
  }

  /**
   * Token ids of `text`, exactly as transformers' `encode`. Runs synchronously: the calling thread waits
   * for the tokenizer's worker. Prefer {@link HfTokenizer.encodeAsync} on a server's event loop.
   */
  encode(text: string, options: EncodeOptions = {}): number[] {
    checkText(text);
    return this.encoder.encodeSync(text, options.addSpecialTokens ?? true);
  }

  /**
   * {@link HfTokenizer.encode} without blocking the event loop (the worker encodes). Without special tokens
   * added (a rendered chat), the pieces of text between added tokens are cached: a prompt that repeats
   * earlier messages encodes only its new ones.
   */
  async encodeAsync(text: string, options: EncodeOptions = {}): Promise<number[]> {
    checkText(text);
    const addSpecialTokens = options.addSpecialTokens ?? true;
    if (!addSpecialTokens && this.segmented !== null) return this.segmented.encode(text);
    return this.encoder.encode(text, addSpecialTokens);
  }

  /** Text of `ids`, exactly as transformers' `decode`. Ids the tokenizer does not know are skipped. */
  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    const skip = options.skipSpecialTokens ?? false;
    const pieces: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      const piece = this.pieces[id];
      if (piece === undefined || (skip && this.special[id] === 1)) continue;
      pieces.push(piece);
    }
    const text = this.decodePieces(pieces);
    return (options.cleanUpTokenizationSpaces ?? this.cleanUp) ? cleanUpTokenization(text) : text;
  }

  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateOptions): string {
    return this.templates.render(messages, options);
  }

  /**
   * A per-sequence incremental decoder. Its output joined equals `decode(ids, { skipSpecialTokens,
   * cleanUpTokenizationSpaces: false })`.
   */
  createDecodeStream(options: { readonly skipSpecialTokens?: boolean } = {}): DecodeStream {
    return new IncrementalDecodeStream(this.pieceDecoder, options.skipSpecialTokens ?? false);
  }

  /** The vocabulary string of `id` (e.g. `Ġworld`, `▁Hello`, `<0x0A>`), or null. */
  idToToken(id: number): string | null {
    return this.pieces[id] ?? null;
  }

  /** The id of a vocabulary string or added token, or null. */
  tokenToId(token: string): number | null {
    if (this.idsByPiece === null) {
      this.idsByPiece = new Map();
      this.pieces.forEach((piece, id) => {
        if (piece !== undefined) this.idsByPiece!.set(piece, id);
      });
    }
    return this.idsByPiece.get(token) ?? null;
  }

  /** True for added tokens marked `special` (what `skipSpecialTokens` leaves out). */
  isSpecialToken(id: number): boolean {
    return this.special[id] === 1;
  }

  /** Stop the encode worker. `encode` then throws; everything else keeps working. */
  dispose(): Promise<void> {
    return this.encoder.dispose();
  }

  private decodePieces(pieces: string[]): string {
    if (pieces.length === 0) return '';
    // Without a decoder, the Rust tokenizer joins tokens with spaces.
    return this.decoder ? this.decoder.decode(pieces) : pieces.join(' ');
  }
}

function checkText(text: unknown): void {
  if (typeof text !== 'string') {
    throw new FerrumError('invalid_argument', `text to encode must be a string, got ${typeof text}`);
  }
}

/** A sentencepiece byte-fallback token such as `<0x0A>`. */
function isByteToken(piece: string): boolean {
  return piece.length === 6 && piece.startsWith('<0x') && piece.endsWith('>');
}
