import type { ChatMessage, ChatTool } from '@ferrum/types';
import { defineToken, type SpecificationVersion } from './injection-token.js';

/** Options of {@link Tokenizer.applyChatTemplate}. */
export interface ChatTemplateOptions {
  readonly tools?: readonly ChatTool[];
  /** End the prompt with the assistant turn's header. Default true (false with `continueFinalMessage`). */
  readonly addGenerationPrompt?: boolean;
  /**
   * Leave the final message open so the model continues it (transformers' and vLLM's
   * `continue_final_message`, e.g. to prefill the start of an answer): the prompt ends right after that
   * message's text, without its end of turn. Incompatible with `addGenerationPrompt: true`. Default false.
   */
  readonly continueFinalMessage?: boolean;
  /** Name of one of several templates in `tokenizer_config.json` (e.g. `tool_use`). */
  readonly templateName?: string;
  /** Extra template variables (`enable_thinking`, ...). */
  readonly kwargs?: Readonly<Record<string, unknown>>;
}

/**
 * Incremental detokenizer of one sequence: returns only complete UTF-8 text, and the concatenation of
 * every `push` result plus `flush()` equals `decode(all ids, { skipSpecialTokens })` without
 * transformers' clean-up of tokenization spaces (which streaming never applies, as in vLLM).
 */
export interface DecodeStream {
  /** Feed one generated token; returns the text it completes (may be ""). */
  push(tokenId: number): string;
  /** Text still held back (an incomplete character at the end). */
  flush(): string;
}

/** Text in, ids out, and back, as the Hugging Face stack does for the served model. */
export interface Tokenizer {
  readonly specificationVersion: SpecificationVersion;
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  readonly bosTokenId: number | null;
  /** Token ids of `text`; `addSpecialTokens` (default true) adds BOS/EOS as the model's tokenizer does. */
  encode(text: string, options?: { readonly addSpecialTokens?: boolean }): number[];
  /**
   * Optional: `encode` without blocking the event loop (tokenization on another thread). Callers on a
   * server's event loop prefer it when present.
   */
  encodeAsync?(text: string, options?: { readonly addSpecialTokens?: boolean }): Promise<number[]>;
  /**
   * Text of `ids`; `skipSpecialTokens` defaults to false. `cleanUpTokenizationSpaces` (transformers'
   * `clean_up_tokenization_spaces`) defaults to the model's setting.
   */
  decode(
    ids: ArrayLike<number>,
    options?: { readonly skipSpecialTokens?: boolean; readonly cleanUpTokenizationSpaces?: boolean },
  ): string;
  /**
   * Optional: the vocabulary piece of `id` as transformers' `convert_ids_to_tokens` gives it (`Ġworld`,
   * `▁Hello`, `<0x0A>`, `<|im_end|>`), or null for an id outside the vocabulary.
   */
  idToToken?(id: number): string | null;
  /** Render a chat to the prompt string, exactly as transformers' `apply_chat_template`. */
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateOptions): string;
  /** A new per-sequence incremental detokenizer; `skipSpecialTokens` defaults to false. */
  createDecodeStream(options?: { readonly skipSpecialTokens?: boolean }): DecodeStream;
}

export const TOKENIZER = defineToken<Tokenizer>('TokenizerV1');
