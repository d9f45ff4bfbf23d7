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
import { BatchBuffers } from './batch-buffers.js';
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
  private readonly registry: SequenceRegistry;
  private readonly plan: StepPlan;
  private readonly planner: StepPlanner;
  private readonly completer: StepCompleter;
  private readonly buffers: BatchBuffers;
  private readonly seeds: SeedStream;
  private stepNo = 0;
  private numRequests = 0;
  /** The step handed out by `schedule()` and not yet completed. */
  private outstanding: ScheduledStep | null = null;

  constructor(
    private readonly options: ResolvedSchedulerOptions,
    kv: KvCacheManager,
  ) {
    this.registry = new SequenceRegistry(kv, options);
    this.plan = new StepPlan(options);
    this.planner = new StepPlanner(this.registry, this.plan);
    this.completer = new StepCompleter(this.registry, this.plan);
    this.seeds = new SeedStream(options.seed);
    this.buffers = new BatchBuffers({
      maxNumTokens: options.maxNumBatchedTokens,
      maxNumSeqs: options.maxNumSeqs,
      maxNumKvTokens: options.maxNumBatchedKvTokens,
      // A prompt sequence samples once per future fork, and it holds a seat for each.
      maxNumSamples: options.maxNumSeqs,
    });
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
    this.dropOutstanding();
    const { registry, plan } = this;
    registry.purgeRetired();
    plan.begin(++this.stepNo, this.options, registry.countSeats());
    this.planner.run();
    if (plan.isEmpty && plan.swapOut.length === 0 && plan.preempted.length === 0) return null;
    plan.emit(this.buffers, registry.kv);
    const step: ScheduledStep = {
      batch: this.buffers.view(),
      swapIn: plan.swapIn,
      swapOut: plan.swapOut,
      preempted: plan.preempted,
      seqIds: plan.seqIds,
    };
    this.outstanding = step;
    return step;
  }

  complete(step: ScheduledStep, tokenIds: Int32Array): readonly SequenceUpdate[] {
    if (step !== this.outstanding) {
      throw new FerrumError(
        'invalid_argument',
        'complete() takes the step returned by the latest schedule()',
      );
    }
    if (tokenIds.length < step.batch.sampleRows.length) {
      throw new FerrumError(
        'invalid_argument',
        `complete() got ${tokenIds.length} tokens for ${step.batch.sampleRows.length} sampled rows`,
      );
    }
    this.outstanding = null;
    return this.completer.run(tokenIds);
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
   * A step whose sequences all ended (e.g. aborted after a failed forward) may be left uncompleted; one
   * with live sequences may not, since their slots were allocated for tokens that were never applied.
   */
  private dropOutstanding(): void {
    if (this.outstanding === null) return;
    if (this.plan.seqs.some((seq) => seq.place === 'running')) {
      throw new FerrumError('invalid_argument', 'schedule() called before complete() of the previous step');
    }
    this.outstanding = null;
  }
}
