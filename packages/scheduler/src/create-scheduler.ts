import type {
  KvCacheManager,
  ScheduledStep,
  Scheduler,
  SchedulerStats,
  SequenceRequest,
  SequenceState,
  SequenceUpdate,
} from '@ferrum/interfaces';
import { FerrumError, type FinishReason } from '@ferrum/types';
import { createRequestSequences } from './request-sequences.js';
import {
  type ResolvedSchedulerOptions,
  resolveSchedulerOptions,
  type SchedulerOptions,
} from './scheduler-options.js';
import { SeedStream } from './seed-stream.js';
import { SequenceRegistry } from './sequence-registry.js';
import { StepCompleter } from './step-completer.js';
import { StepPlan } from './step-plan.js';
import { StepPlanner } from './step-planner.js';

/**
 * Create the continuous-batching scheduler over `kv` (which it uses as the only source of KV slots).
 * Throws FerrumError `invalid_argument` for bad options. See the package README for the policy.
 */
export function createScheduler(options: SchedulerOptions, kv: KvCacheManager): Scheduler {
  return new ContinuousScheduler(resolveSchedulerOptions(options, kv), kv);
}

class ContinuousScheduler implements Scheduler {
  readonly specificationVersion = 'v1' as const;
  readonly supportsAsyncScheduling = true;
  private readonly registry: SequenceRegistry;
  /** Two plans with their own buffers, used in turn: a step in flight keeps its own while the next is built. */
  private readonly plans: readonly [StepPlan, StepPlan];
  private readonly planner: StepPlanner;
  private readonly completer: StepCompleter;
  private readonly seeds: SeedStream;
  private stepNo = 0;
  private numHandedOut = 0;
  private numRequests = 0;
  /** Plans of the steps handed out by `schedule()` and not completed yet, oldest first (at most two). */
  private readonly outstanding: StepPlan[] = [];

  constructor(
    private readonly options: ResolvedSchedulerOptions,
    kv: KvCacheManager,
  ) {
    this.registry = new SequenceRegistry(kv, options);
    this.plans = [new StepPlan(options, 0), new StepPlan(options, 1)];
    this.planner = new StepPlanner(this.registry);
    this.completer = new StepCompleter(this.registry);
    this.seeds = new SeedStream(options.seed);
  }

  add(request: SequenceRequest): void {
    const { registry } = this;
    const previous = registry.groups.get(request.requestId);
    if (previous?.sequences.some((s) => s.isLive)) {
      throw new FerrumError('invalid_argument', `request ${request.requestId} is already scheduled`);
    }
    const length = request.promptTokenIds.length;
    if (length > this.options.maxModelLen) {
      throw new FerrumError(
        'context_length_exceeded',
        `prompt has ${length} tokens, more than maxModelLen (${this.options.maxModelLen})`,
        { details: { promptTokens: length, maxModelLen: this.options.maxModelLen } },
      );
    }
    if (registry.numQueued >= this.options.maxQueueSize) {
      throw new FerrumError('queue_full', `${registry.numQueued} requests are already waiting`, {
        details: { maxQueueSize: this.options.maxQueueSize },
      });
    }
    const group = createRequestSequences(request, ++this.numRequests, this.options, this.seeds);
    if (previous) registry.forgetGroup(previous);
    for (const seq of group.sequences) {
      if (registry.sequences.get(seq.seqId)?.isLive) {
        throw new FerrumError('invalid_argument', `sequence id ${seq.seqId} is already in use`);
      }
    }
    for (const seq of group.sequences) registry.sequences.set(seq.seqId, seq);
    registry.groups.set(request.requestId, group);
    registry.enqueue(group.sequences[0]);
  }

  abort(requestId: string): boolean {
    const group = this.registry.groups.get(requestId);
    if (group === undefined) return false;
    let aborted = false;
    for (const seq of group.sequences) {
      if (!seq.isLive) continue;
      this.registry.release(seq, 'aborted');
      aborted = true;
    }
    return aborted;
  }

  finish(seqId: string, reason: FinishReason): void {
    const seq = this.registry.sequences.get(seqId);
    if (seq === undefined) throw new FerrumError('not_found', `unknown sequence ${seqId}`);
    this.registry.release(seq, reason === 'abort' ? 'aborted' : 'finished');
  }

  schedule(): ScheduledStep | null {
    // The latest step may still be running, ended or not: it stays until completed or a later one is.
    this.dropEnded(this.outstanding.length - 1);
    if (this.outstanding.length > 1) {
      throw new FerrumError(
        'invalid_argument',
        'schedule() called with two steps not completed: complete() the older one first',
      );
    }
    const { registry } = this;
    registry.purgeRetired();
    // Plans alternate per step handed out, never reusing the buffers of the latest step.
    const plan = this.plans[this.numHandedOut % 2];
    plan.begin(++this.stepNo, this.options, registry.countSeats());
    this.planner.run(plan);
    if (plan.isEmpty && plan.swapOut.length === 0 && plan.preempted.length === 0) return null;
    plan.emit(registry.kv);
    this.numHandedOut++;
    this.outstanding.push(plan);
    return plan.step;
  }

  complete(step: ScheduledStep, tokenIds: Int32Array): readonly SequenceUpdate[] {
    const { outstanding } = this;
    let index = 0;
    while (index < outstanding.length && outstanding[index].step !== step) index++;
    if (index === outstanding.length) {
      throw new FerrumError('invalid_argument', 'complete() takes a step from schedule() not completed yet');
    }
    if (tokenIds.length < step.batch.sampleRows.length) {
      throw new FerrumError(
        'invalid_argument',
        `complete() got ${tokenIds.length} tokens for ${step.batch.sampleRows.length} sampled rows`,
      );
    }
    this.dropEnded(index);
    if (outstanding[0].step !== step) {
      throw new FerrumError('invalid_argument', 'complete() the older step not completed yet first');
    }
    const plan = outstanding.shift()!;
    const updates = this.completer.run(plan, tokenIds);
    // A step planned while this one ran takes its sampled tokens in its placeholder rows.
    outstanding[0]?.fillPlaceholders(tokenIds);
    return updates;
  }

  stateOf(seqId: string): SequenceState | undefined {
    return this.registry.sequences.get(seqId)?.state;
  }

  hasWork(): boolean {
    return this.registry.waiting.length > 0 || this.registry.running.length > 0;
  }

  stats(): SchedulerStats {
    const { waiting, running, numSwapped, numPreemptions } = this.registry;
    return {
      numWaiting: waiting.length - numSwapped,
      numRunning: running.length,
      numSwapped,
      numPreemptions,
    };
  }

  /**
   * Forget up to `count` of the oldest outstanding steps while none of their sequences lives: after a
   * failed forward the engine aborts the step's requests and need not complete it. A step with live
   * sequences may not be skipped: their slots and placeholders wait for its tokens.
   */
  private dropEnded(count: number): void {
    for (let i = 0; i < count && !this.outstanding[0].hasLiveSequences; i++) this.outstanding.shift();
  }
}
