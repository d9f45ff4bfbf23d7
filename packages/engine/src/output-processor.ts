import type { DecodeStream, Tokenizer } from '@ferrum/interfaces';
import { createStopMatcher, type StopMatcher } from '@ferrum/tokenizer';
import type { FinishReason, GenerateChunk, SamplingParams, TokenLogprob, Usage } from '@ferrum/types';
import { AsyncChannel } from './async-channel.js';

/** Text state of one of a request's `n` sequences. */
interface SequenceOutput {
  readonly decoder: DecodeStream | null;
  readonly stopper: StopMatcher | null;
  numTokens: number;
  finished: boolean;
  /** A stop string matched: text after it is dropped. */
  stoppedByString: boolean;
}

/** What the engine learns about a request while it runs (for metrics). */
export interface RequestTimes {
  readonly arrivalMs: number;
  scheduledMs: number;
  firstTokenMs: number;
  lastTokenMs: number;
}

/**
 * Turns one request's sampled tokens into chunks: incremental detokenization, stop strings, logprobs,
 * finish and usage. Owns the request's output channel.
 */
export class OutputProcessor {
  readonly channel: AsyncChannel<GenerateChunk>;
  readonly times: RequestTimes;
  private readonly sequences: SequenceOutput[];
  private numFinished = 0;
  /** Reason of the most recently finished sequence (the request's reason once `done`). */
  lastFinishReason: FinishReason = 'stop';
  cachedPromptTokens = 0;

  constructor(
    readonly requestId: string,
    readonly promptTokens: number,
    readonly params: SamplingParams,
    tokenizer: Tokenizer | null,
    nowMs: number,
    onCancel: () => void,
  ) {
    this.channel = new AsyncChannel<GenerateChunk>(onCancel);
    this.times = { arrivalMs: nowMs, scheduledMs: -1, firstTokenMs: -1, lastTokenMs: -1 };
    this.sequences = Array.from({ length: params.n }, () => ({
      decoder: tokenizer
        ? tokenizer.createDecodeStream({ skipSpecialTokens: params.skipSpecialTokens })
        : null,
      stopper:
        tokenizer && params.stop.length > 0
          ? createStopMatcher(params.stop, { includeStop: params.includeStopStrInOutput })
          : null,
      numTokens: 0,
      finished: false,
      stoppedByString: false,
    }));
  }

  get done(): boolean {
    return this.numFinished === this.sequences.length;
  }

  get completionTokens(): number {
    return this.sequences.reduce((sum, s) => sum + s.numTokens, 0);
  }

  /**
   * Record a token of sequence `index`. Returns 'stop' when a stop string matched (the caller finishes the
   * sequence in the scheduler), else null.
   */
  pushToken(index: number, tokenId: number, logprob: TokenLogprob | undefined): 'stop' | null {
    const seq = this.sequences[index];
    if (seq.finished) return null;
    seq.numTokens++;
    let text = seq.decoder ? seq.decoder.push(tokenId) : '';
    let stopped = false;
    if (seq.stopper) {
      const r = seq.stopper.push(text);
      text = r.text;
      stopped = r.stopped;
      seq.stoppedByString = stopped;
    }
    this.emit(index, text, [tokenId], logprob);
    return stopped ? 'stop' : null;
  }

  /** Mark sequence `index` finished; flushes held-back text and closes the channel after the last one. */
  finish(index: number, reason: FinishReason): void {
    const seq = this.sequences[index];
    if (seq.finished) return;
    seq.finished = true;
    this.numFinished++;
    this.lastFinishReason = reason;
    let tail = '';
    // A stop string ends the text: whatever the decoder still holds came after it.
    if (!seq.stoppedByString) {
      tail = seq.decoder ? seq.decoder.flush() : '';
      if (seq.stopper) tail = seq.stopper.push(tail).text + seq.stopper.flush();
    }
    const usage: Usage | undefined = this.done ? this.usage() : undefined;
    this.channel.push({
      requestId: this.requestId,
      index,
      text: tail,
      tokenIds: [],
      finishReason: reason,
      usage,
    });
    if (this.done) this.channel.close();
  }

  /** Finish every live sequence with `reason` (abort, error, shutdown). */
  finishAll(reason: FinishReason): void {
    for (let i = 0; i < this.sequences.length; i++) this.finish(i, reason);
  }

  private usage(): Usage {
    return {
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
      cachedPromptTokens: this.cachedPromptTokens,
    };
  }

  private emit(index: number, text: string, tokenIds: number[], logprob: TokenLogprob | undefined): void {
    const chunk: GenerateChunk = logprob
      ? { requestId: this.requestId, index, text, tokenIds, logprobs: [logprob] }
      : { requestId: this.requestId, index, text, tokenIds };
    this.channel.push(chunk);
  }
}
