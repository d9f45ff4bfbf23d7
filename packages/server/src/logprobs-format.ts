import type { TokenLogprob } from '@ferrum/types';
import type { SequenceTokenTexts } from './logprob-token-text.js';
import { finiteLogprob } from './token-text.js';

/** `choices[i].logprobs` of `/v1/completions` (OpenAI's legacy shape). */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
}

/** Builds completion logprobs of one choice; keeps the running text offset across streamed chunks. */
export class CompletionLogprobsBuilder {
  private textOffset = 0;

  /** `texts` reads the choice's tokens (it starts with the prompt as context). */
  constructor(private readonly texts: SequenceTokenTexts) {}

  /** Logprobs of `entries`, appended to `into` (a fresh object per streamed chunk, or one for the whole choice). */
  append(
    entries: readonly TokenLogprob[],
    into: CompletionLogprobs = emptyCompletionLogprobs(),
  ): CompletionLogprobs {
    for (const entry of entries) {
      const token = this.texts.textOf(entry.tokenId);
      into.tokens.push(token);
      into.token_logprobs.push(finiteLogprob(entry.logprob));
      const top: Record<string, number> = { [token]: finiteLogprob(entry.logprob) };
      // Two tokens may read the same (two "" halves of characters): the first, most likely one keeps the key.
      for (const alt of entry.top ?? []) top[this.texts.textOf(alt.tokenId)] ??= finiteLogprob(alt.logprob);
      into.top_logprobs.push(top);
      into.text_offset.push(this.textOffset);
      // Offsets count characters (code points) as vLLM's Python strings do, not UTF-16 units.
      this.textOffset += codePoints(token);
      this.texts.advance(entry.tokenId);
    }
    return into;
  }
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

export function emptyCompletionLogprobs(): CompletionLogprobs {
  return { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
}

/** One token of `choices[i].logprobs.content` of the chat API. */
export interface ChatLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

/** Builds chat logprobs of one choice; `top_logprobs` holds the `topCount` alternatives asked for. */
export class ChatLogprobsBuilder {
  /** `texts` reads the choice's tokens (it starts with the prompt as context). */
  constructor(
    private readonly texts: SequenceTokenTexts,
    private readonly topCount: number,
  ) {}

  /** Logprobs of the choice's next `entries`. */
  build(entries: readonly TokenLogprob[]): ChatLogprob[] {
    return entries.map((entry) => {
      const chosen = {
        ...this.tokenEntry(entry.tokenId, entry.logprob),
        top_logprobs: (entry.top ?? [])
          .slice(0, this.topCount)
          .map((alt) => this.tokenEntry(alt.tokenId, alt.logprob)),
      };
      this.texts.advance(entry.tokenId);
      return chosen;
    });
  }

  private tokenEntry(tokenId: number, logprob: number) {
    const token = this.texts.textOf(tokenId);
    return { token, logprob: finiteLogprob(logprob), bytes: [...Buffer.from(token, 'utf8')] };
  }
}
