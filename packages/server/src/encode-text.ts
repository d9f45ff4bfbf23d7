import type { Tokenizer } from '@ferrum/interfaces';

/** Tokenizers that can encode off the event loop (`HfTokenizer` encodes on its worker thread). */
interface AsyncEncoder {
  encodeAsync(text: string, options: { readonly addSpecialTokens?: boolean }): Promise<number[]>;
}

function hasAsyncEncode(tokenizer: Tokenizer): tokenizer is Tokenizer & AsyncEncoder {
  return typeof (tokenizer as Partial<AsyncEncoder>).encodeAsync === 'function';
}

/**
 * Token ids of `text`, encoded without blocking the event loop when the tokenizer can (a long prompt
 * must not stall the engine's step loop, which shares this thread), else synchronously.
 */
export function encodeText(tokenizer: Tokenizer, text: string, addSpecialTokens: boolean): Promise<number[]> {
  return hasAsyncEncode(tokenizer)
    ? tokenizer.encodeAsync(text, { addSpecialTokens })
    : Promise.resolve(tokenizer.encode(text, { addSpecialTokens }));
}
