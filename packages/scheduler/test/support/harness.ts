import type {
  KvCacheManager,
  ScheduledStep,
  Scheduler,
  SequenceRequest,
  SequenceUpdate,
} from '@ferrum/interfaces';
import { type FinishReason, resolveSamplingParams, type SamplingParams } from '@ferrum/types';
import { checkStep } from './check-step.js';
import { FAKE_EOS, FakeRuntime } from './fake-runtime.js';

/** A request as tests write it. */
export interface TestRequest {
  readonly requestId: string;
  readonly prompt: readonly number[];
  readonly sampling?: Partial<SamplingParams>;
  readonly priority?: number;
  readonly arrivalTimeMs?: number;
}

/**
 * Plays the engine over a fake runtime: schedules, checks every batch, runs it, completes it, and keeps an
 * independent record of each sequence's tokens and end, failing on tokens after the end or a second end.
 */
export class Harness {
  readonly runtime: FakeRuntime;
  /** Prompt plus outputs per sequence id, from the updates. */
  readonly tokens = new Map<string, number[]>();
  /** How each sequence ended, 'abort' included. */
  readonly ends = new Map<string, FinishReason>();
  readonly requests = new Map<string, SequenceRequest>();
  /** States each sequence went through (consecutive repeats dropped), observed around every call. */
  readonly trace = new Map<string, string[]>();
  /** States requests were in when aborted. */
  readonly abortedStates = new Set<string>();
  numSteps = 0;
  numSwapOuts = 0;
  numSwapIns = 0;
  private clock = 0;

  constructor(
    readonly scheduler: Scheduler,
    readonly kv: KvCacheManager,
    readonly limits: { readonly maxNumBatchedTokens: number; readonly maxNumSeqs: number },
    numHostSlots = 0,
  ) {
    this.runtime = new FakeRuntime(kv.numSlots, numHostSlots);
  }

  add(test: TestRequest): SequenceRequest {
    const request: SequenceRequest = {
      requestId: test.requestId,
      promptTokenIds: Int32Array.from(test.prompt),
      sampling: resolveSamplingParams({ temperature: 0, ...test.sampling }),
      priority: test.priority ?? 0,
      arrivalTimeMs: test.arrivalTimeMs ?? ++this.clock,
      eosTokenIds: [FAKE_EOS],
    };
    this.scheduler.add(request);
    this.requests.set(request.requestId, request);
    this.observe();
    return request;
  }

  /** Sequence ids of a request that produce output. */
  outputSeqIds(requestId: string): string[] {
    const { n } = this.requests.get(requestId)!.sampling;
    return n === 1 ? [requestId] : Array.from({ length: n }, (_, i) => `${requestId}#${i}`);
  }

  abort(requestId: string): boolean {
    if (!this.requests.has(requestId)) return this.scheduler.abort(requestId);
    for (const id of [requestId, ...this.outputSeqIds(requestId)]) {
      const state = this.scheduler.stateOf(id);
      if (state && state !== 'finished' && state !== 'aborted') this.abortedStates.add(state);
    }
    const aborted = this.scheduler.abort(requestId);
    this.observe();
    if (aborted)
      for (const id of this.outputSeqIds(requestId)) if (!this.ends.has(id)) this.ends.set(id, 'abort');
    return aborted;
  }

  /** One engine step; null when the scheduler had nothing to run. `inspect` sees the checked step first. */
  step(inspect?: (step: ScheduledStep) => void): readonly SequenceUpdate[] | null {
    const step = this.scheduler.schedule();
    this.observe();
    if (step === null) return null;
    this.numSteps++;
    checkStep(step, {
      scheduler: this.scheduler,
      kv: this.kv,
      ...this.limits,
      tokensOf: (id) => this.tokens.get(id) ?? this.promptOf(id),
      promptOf: (id) => this.promptOf(id),
    });
    this.numSwapOuts += step.swapOut.length;
    this.numSwapIns += step.swapIn.length;
    inspect?.(step);
    const updates = this.scheduler.complete(step, this.runtime.run(step));
    for (const update of updates) this.record(update);
    this.observe();
    return updates;
  }

  /** Step until nothing is left; fails after `maxSteps` steps in all. */
  drain(inspect?: (step: ScheduledStep) => void, maxSteps = 100_000): void {
    while (this.scheduler.hasWork()) {
      if (this.numSteps >= maxSteps) throw new Error(`no end after ${maxSteps} steps`);
      if (this.step(inspect) === null) throw new Error('work left but nothing schedulable');
    }
  }

  outputsOf(seqId: string): number[] {
    const request = this.requests.get(seqId.split('#')[0])!;
    return (this.tokens.get(seqId) ?? []).slice(request.promptTokenIds.length);
  }

  private observe(): void {
    for (const requestId of this.requests.keys()) {
      const request = this.requests.get(requestId)!;
      const ids = request.sampling.n === 1 ? [requestId] : [requestId, ...this.outputSeqIds(requestId)];
      for (const id of ids) {
        const state = this.scheduler.stateOf(id);
        if (state === undefined) continue;
        const trace = this.trace.get(id) ?? [];
        if (trace[trace.length - 1] !== state) trace.push(state);
        this.trace.set(id, trace);
      }
    }
  }

  private promptOf(seqId: string): number[] {
    return Array.from(this.requests.get(seqId.split('#')[0])!.promptTokenIds);
  }

  private record(update: SequenceUpdate): void {
    const { seqId } = update;
    if (this.ends.has(seqId)) throw new Error(`${seqId} got an update after it ended`);
    if (update.tokenId >= 0) {
      const tokens = this.tokens.get(seqId) ?? this.promptOf(seqId);
      tokens.push(update.tokenId);
      this.tokens.set(seqId, tokens);
    }
    if (update.finishReason) this.ends.set(seqId, update.finishReason);
  }
}
