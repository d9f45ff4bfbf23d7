import { FerrumError } from '@ferrum/types';
import { type Decoder, Tokenizer as NativeTokenizer } from 'tokenizers';
import type { TokenizerJson } from './transformers-pipeline.js';

/** Token strings by id, read from `tokenizer.json` (the model's vocabulary, then its added tokens). */
export interface Vocabulary {
  /** Vocabulary strings by id; holes for unused ids. */
  readonly pieces: readonly (string | undefined)[];
  /** Number of distinct ids (transformers' `len(tokenizer)`). */
  readonly size: number;
  /** 1 at the ids of added tokens marked `special`. */
  readonly special: Uint8Array;
}

/**
 * Read the vocabulary of a `tokenizer.json`: an object `{ piece: id }` (BPE, WordPiece, WordLevel) or a
 * list of `[piece, score]` (Unigram), with added tokens taking their ids over.
 *
 * @throws FerrumError `invalid_checkpoint` when the vocabulary is missing or malformed.
 */
export function readVocabulary(json: TokenizerJson, file: string): Vocabulary {
  const pieces: (string | undefined)[] = [];
  const vocab = json.model?.vocab;
  if (Array.isArray(vocab)) {
    vocab.forEach((entry, id) => {
      pieces[id] = Array.isArray(entry) ? String(entry[0]) : undefined;
    });
  } else if (typeof vocab === 'object' && vocab !== null) {
    for (const [piece, id] of Object.entries(vocab as Record<string, unknown>)) {
      if (Number.isInteger(id) && (id as number) >= 0) pieces[id as number] = piece;
    }
  } else {
    throw new FerrumError('invalid_checkpoint', `${file}: model.vocab is missing`, { details: { file } });
  }
  const added = json.added_tokens ?? [];
  for (const token of added) pieces[token.id] = token.content;
  const special = new Uint8Array(pieces.length);
  for (const token of added) if (token.special) special[token.id] = 1;
  let size = 0;
  for (const piece of pieces) if (piece !== undefined) size++;
  return { pieces, size, special };
}

/**
 * The native decoder of a `tokenizer.json` decoder section, built through a tokenizer with an empty
 * model: decoding needs only the token strings, and this avoids loading the whole model on this thread.
 * Null when the file has no decoder (tokens are then joined with spaces, as the Rust tokenizer does).
 */
export function loadDecoder(decoder: unknown, file: string): Decoder | null {
  if (decoder === undefined || decoder === null) return null;
  const shell = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder,
    model: { type: 'WordLevel', vocab: {}, unk_token: '' },
  };
  try {
    return NativeTokenizer.fromString(JSON.stringify(shell)).getDecoder();
  } catch (error) {
    throw new FerrumError('invalid_checkpoint', `${file}: unsupported decoder: ${(error as Error).message}`, {
      cause: error,
      details: { file },
    });
  }
}
