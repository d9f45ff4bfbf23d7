import type { ChatTemplateOptions, DecodeStream, Tokenizer } from '@ferrum/interfaces';
import { type ChatMessage, FerrumError, type SamplingParams } from '@ferrum/types';
import type { Decoder, Tokenizer as NativeTokenizer } from 'tokenizers';
import type { ChatTemplateRenderer } from './chat-template.js';
import { cleanUpTokenization } from './clean-up-tokenization.js';
import { IncrementalDecodeStream, type PieceDecoder } from './decode-stream.js';
import { SyncEncoder, type SyncEncoderSource } from './sync-encoder.js';

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

/** Everything {@link loadTokenizer} assembles for an {@link HfTokenizer}. */
export interface HfTokenizerParts {
  readonly native: NativeTokenizer;
  /** Source of the worker that serves synchronous `encode`. */
  readonly encoderSource: SyncEncoderSource;
  /** Ids of added tokens marked `special` in `tokenizer.json`. */
  readonly specialIds: ReadonlySet<number>;
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
 * configuration, behaving as transformers 5 does. Create it with {@link loadTokenizer}; call
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

  private readonly native: NativeTokenizer;
  private readonly decoder: Decoder | null;
  /** Vocabulary strings by id (holes for unused ids). */
  private readonly pieces: (string | undefined)[];
  private readonly special: Uint8Array;
  private readonly cleanUp: boolean;
  private readonly templates: ChatTemplateRenderer;
  private readonly pieceDecoder: PieceDecoder;
  private encoderSource: SyncEncoderSource | null;
  private encoder: SyncEncoder | null = null;

  constructor(parts: HfTokenizerParts) {
    this.native = parts.native;
    this.decoder = parts.native.getDecoder();
    this.vocabSize = parts.native.getVocabSize(true);
    this.pieces = [];
    for (const [piece, id] of Object.entries(parts.native.getVocab(true))) this.pieces[id] = piece;
    this.special = new Uint8Array(this.pieces.length);
    for (const id of parts.specialIds) if (id < this.special.length) this.special[id] = 1;
    this.eosTokenIds = parts.eosTokenIds;
    this.bosTokenId = parts.bosTokenId;
    this.modelMaxLength = parts.modelMaxLength;
    this.samplingDefaults = parts.samplingDefaults;
    this.cleanUp = parts.cleanUpTokenizationSpaces;
    this.templates = parts.chatTemplates;
    this.encoderSource = parts.encoderSource;
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
    if (this.encoder === null || !this.encoder.usable) {
      if (this.encoderSource === null)
        throw new FerrumError('invalid_argument', 'this tokenizer is disposed');
      this.encoder = new SyncEncoder(this.encoderSource);
    }
    return this.encoder.encode(text, options.addSpecialTokens ?? true);
  }

  /** {@link HfTokenizer.encode} on the libuv thread pool, without blocking the event loop. */
  async encodeAsync(text: string, options: EncodeOptions = {}): Promise<number[]> {
    checkText(text);
    const encoding = await this.native.encode(text, null, {
      addSpecialTokens: options.addSpecialTokens ?? true,
    });
    return encoding.getIds();
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
    return this.native.tokenToId(token) ?? null;
  }

  /** True for added tokens marked `special` (what `skipSpecialTokens` leaves out). */
  isSpecialToken(id: number): boolean {
    return this.special[id] === 1;
  }

  /** Stop the encode worker. `encode` then throws; everything else keeps working. */
  async dispose(): Promise<void> {
    this.encoderSource = null;
    const encoder = this.encoder;
    this.encoder = null;
    await encoder?.dispose();
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
