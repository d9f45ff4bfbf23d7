import type { Tokenizer } from '@ferrum/interfaces';
import type { TokenLogprob } from '@ferrum/types';
import { finiteLogprob, tokenText } from './token-text.js';

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

  constructor(private readonly tokenizer: Tokenizer | null) {}

  /** Logprobs of `entries`, appended to `into` (a fresh object per streamed chunk, or one for the whole choice). */
  append(
    entries: readonly TokenLogprob[],
    into: CompletionLogprobs = emptyCompletionLogprobs(),
  ): CompletionLogprobs {
    for (const entry of entries) {
      const token = tokenText(this.tokenizer, entry.tokenId);
      into.tokens.push(token);
      into.token_logprobs.push(finiteLogprob(entry.logprob));
      const top: Record<string, number> = { [token]: finiteLogprob(entry.logprob) };
      for (const alt of entry.top ?? [])
        top[tokenText(this.tokenizer, alt.tokenId)] = finiteLogprob(alt.logprob);
      into.top_logprobs.push(top);
      into.text_offset.push(this.textOffset);
      this.textOffset += token.length;
    }
    return into;
  }
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

/** Chat logprobs of `entries`; `top_logprobs` holds the `topCount` alternatives the request asked for. */
export function chatLogprobs(
  entries: readonly TokenLogprob[],
  tokenizer: Tokenizer | null,
  topCount: number,
): ChatLogprob[] {
  return entries.map((entry) => ({
    ...tokenEntry(tokenizer, entry.tokenId, entry.logprob),
    top_logprobs: (entry.top ?? [])
      .slice(0, topCount)
      .map((alt) => tokenEntry(tokenizer, alt.tokenId, alt.logprob)),
  }));
}

function tokenEntry(tokenizer: Tokenizer | null, tokenId: number, logprob: number) {
  const token = tokenText(tokenizer, tokenId);
  return { token, logprob: finiteLogprob(logprob), bytes: [...Buffer.from(token, 'utf8')] };
}
