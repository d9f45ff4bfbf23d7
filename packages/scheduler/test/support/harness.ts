import type {
  KvCacheManager,
  ScheduledStep,
  Scheduler,
  SequenceRequest,
  SequenceUpdate,
} from '@ferrum/interfaces';
import { type FinishReason, resolveSamplingParams, type SamplingParams } from '@ferrum/types';
import { checkResolved, checkStep, type StepCheckContext } from './check-step.js';
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
 *
 * With `overlap` it plays the async engine loop: the next step is planned while the launched one is in
 * flight, and the launched one runs on the fake runtime only when it completes, so it reads its batch
 * after the next one was built (a scheduler that reused its arrays would corrupt it).
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
  /** Steps planned while another was in flight, and placeholder rows they held. */
  numOverlapped = 0;
  numPlaceholders = 0;
  /** Sequences of the step in flight preempted while planning the next. */
  numPreemptedInFlight = 0;
  /** Placeholder rows launched for a sequence that had ended meanwhile (computed, then ignored). */
  numDiscarded = 0;
  private clock = 0;
  /** The launched step, not completed yet (overlap). */
  private inFlight: ScheduledStep | null = null;

  constructor(
    readonly scheduler: Scheduler,
    readonly kv: KvCacheManager,
    readonly limits: { readonly maxNumBatchedTokens: number; readonly maxNumSeqs: number },
    numHostSlots = 0,
    readonly overlap = false,
  ) {
    this.runtime = new FakeRuntime(kv.numSlots, numHostSlots);
  }

  /** Whether work is left: waiting or running sequences, or a step in flight. */
  get busy(): boolean {
    return this.scheduler.hasWork() || this.inFlight !== null;
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

  /**
   * One engine step; null when the scheduler had nothing to run. `inspect` sees the checked step first.
   * With overlap: plan the next step, complete the one in flight (returning its updates), launch the next;
   * null when nothing was planned or in flight.
   */
  step(inspect?: (step: ScheduledStep) => void): readonly SequenceUpdate[] | null {
    const previous = this.inFlight;
    const step = this.scheduler.schedule();
    this.observe();
    if (step === null && previous === null) return null;
    if (step !== null) {
      this.numSteps++;
      checkStep(step, this.checkContext(previous));
      this.numSwapOuts += step.swapOut.length;
      this.numSwapIns += step.swapIn.length;
      if (previous !== null) this.numOverlapped++;
      this.numPlaceholders += step.placeholders?.rows.length ?? 0;
      for (const id of step.preempted) if (previous?.seqIds.includes(id)) this.numPreemptedInFlight++;
      inspect?.(step);
    }
    if (!this.overlap) return this.run(step!);
    const updates = previous === null ? [] : this.run(previous);
    if (step !== null && previous !== null) {
      checkResolved(step, this.checkContext(previous), (id) => !this.ends.has(id));
      for (const row of step.placeholders?.rows ?? []) {
        let b = 0;
        while (step.batch.qIndptr[b + 1] <= row) b++;
        if (this.ends.has(step.seqIds[b])) this.numDiscarded++;
      }
    }
    this.inFlight = step;
    return updates;
  }

  /** Step until nothing is left; fails after `maxSteps` steps in all. */
  drain(inspect?: (step: ScheduledStep) => void, maxSteps = 100_000): void {
    while (this.busy) {
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

  /** Run `step` on the fake runtime and complete it. */
  private run(step: ScheduledStep): readonly SequenceUpdate[] {
    const updates = this.scheduler.complete(step, this.runtime.run(step));
    for (const update of updates) this.record(update);
    this.observe();
    return updates;
  }

  private checkContext(previous: ScheduledStep | null): StepCheckContext {
    return {
      scheduler: this.scheduler,
      kv: this.kv,
      ...this.limits,
      tokensOf: (id) => this.tokens.get(id) ?? this.promptOf(id),
      promptOf: (id) => this.promptOf(id),
      previous,
    };
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
