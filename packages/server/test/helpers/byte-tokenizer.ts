import type { DecodeStream, Tokenizer } from '@ferrum/interfaces';
import type { ChatMessage } from '@ferrum/types';

export const BOS_ID = 256;
export const EOS_ID = 257;
const SPECIALS: Record<number, string> = { [BOS_ID]: '<s>', [EOS_ID]: '</s>' };

/**
 * A test tokenizer: one token per UTF-8 byte (ids 0-255) plus BOS/EOS. Its chat template writes
 * `<|role|>content` lines (tool calls in Hermes tags) and, with tools, a `<tools>` JSON line, so tests
 * can read what was rendered.
 */
export function createByteTokenizer(): Tokenizer {
  const decode = (ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }) => {
    const bytes: number[] = [];
    let out = '';
    for (const id of Array.from(ids)) {
      if (id < 256) bytes.push(id);
      else if (!(options?.skipSpecialTokens ?? true)) {
        out += Buffer.from(bytes).toString('utf8') + SPECIALS[id];
        bytes.length = 0;
      }
    }
    return out + Buffer.from(bytes).toString('utf8');
  };
  return {
    specificationVersion: 'v1',
    vocabSize: 258,
    eosTokenIds: [EOS_ID],
    bosTokenId: BOS_ID,
    encode: (text, options) => [
      ...(options?.addSpecialTokens === false ? [] : [BOS_ID]),
      ...Buffer.from(text),
    ],
    decode,
    applyChatTemplate(messages: readonly ChatMessage[], options = {}) {
      if (messages[0].role === 'assistant')
        throw new Error('conversations must not start with an assistant turn');
      let text = options.tools ? `<tools>${JSON.stringify(options.tools)}</tools>\n` : '';
      for (const m of messages) {
        const calls = (m.tool_calls ?? []).map(
          (c) =>
            `<tool_call>{"name": "${c.function.name}", "arguments": ${c.function.arguments}}</tool_call>`,
        );
        text += `<|${m.role}|>${typeof m.content === 'string' ? m.content : ''}${calls.join('')}\n`;
      }
      return (options.addGenerationPrompt ?? true) ? `${text}<|assistant|>` : text;
    },
    createDecodeStream(): DecodeStream {
      const decoder = new TextDecoder('utf-8');
      return {
        push: (id) => (id < 256 ? decoder.decode(Uint8Array.of(id), { stream: true }) : ''),
        flush: () => decoder.decode(),
      };
    },
  };
}
