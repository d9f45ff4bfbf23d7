import type { KvCacheManager } from '@ferrum/interfaces';
import type { ResolvedSchedulerOptions } from './scheduler-options.js';
import type { RequestGroup, Sequence } from './sequence.js';
import { SequenceQueue } from './sequence-queue.js';
import type { StepPlan } from './step-plan.js';

/**
 * Every sequence the scheduler knows, the two queues they move between, and the transitions that touch
 * the KV manager. Invariants:
 * - `running` holds exactly the sequences with device KV; `waiting` the ones to start, to recompute
 *   (no KV) and the swapped ones (host KV); dormant children of an `n > 1` request are in neither;
 * - a finished or aborted sequence holds no KV and stays visible (`stateOf`) until the next step.
 */
export class SequenceRegistry {
  readonly waiting = new SequenceQueue();
  readonly running = new SequenceQueue();
  readonly sequences = new Map<string, Sequence>();
  readonly groups = new Map<string, RequestGroup>();
  /** Requests waiting for their first admission (the queue `maxQueueSize` limits). */
  numQueued = 0;
  numSwapped = 0;
  numPreemptions = 0;
  private readonly retired: Sequence[] = [];

  constructor(
    readonly kv: KvCacheManager,
    readonly options: ResolvedSchedulerOptions,
  ) {}

  /** Queue a new request's prompt sequence. */
  enqueue(seq: Sequence): void {
    seq.place = 'waiting';
    this.waiting.insert(seq);
    this.numQueued++;
  }

  /** Move an admitted sequence from `waiting` to `running`. */
  admit(seq: Sequence): void {
    this.waiting.remove(seq);
    if (seq.state === 'waiting') this.numQueued--;
    if (seq.swapped) this.numSwapped--;
    seq.swapped = false;
    seq.place = 'running';
    this.running.insert(seq);
  }

  /**
   * Take a running sequence off the device: swap its KV out (swap mode, when the host tier has room) or
   * free it for recompute, its committed tokens staying in the prefix cache. It waits again, in order.
   *
   * A sequence of the step in flight may be preempted: its slots go only to steps planned later, which
   * the runtime runs after that step, and a swap-out runs after it too, so it moves what the step wrote.
   * The step's token for it still arrives through `complete()` (recompute loses only the step's KV).
   */
  preempt(seq: Sequence, plan: StepPlan): void {
    const { kv } = this;
    this.running.remove(seq);
    plan.numSeats -= seq.numSeats;
    if (this.options.preemptionMode === 'swap' && kv.canSwapOut(seq.seqId)) {
      const swap = kv.swapOut(seq.seqId);
      plan.swapOut.push(swap);
      seq.swapped = true;
      seq.numSwappedSlots = swap.deviceSlots.length;
      seq.resumeState = seq.decodesNext ? 'decoding' : 'prefilling';
      this.numSwapped++;
    } else {
      this.freeDeviceKv(seq);
      seq.numComputed = 0;
      seq.numInFlight = 0;
    }
    seq.setState('preempted');
    seq.stepMark = plan.stepNo;
    seq.place = 'waiting';
    this.waiting.insert(seq);
    this.numPreemptions++;
    plan.preempted.push(seq.seqId);
  }

  /** Turn a swapped sequence into one to recompute: its host copy and its locked prefix are freed. */
  abandonSwap(seq: Sequence): void {
    this.kv.free(seq.seqId);
    seq.swapped = false;
    seq.numComputed = 0;
    seq.numInFlight = 0;
    this.numSwapped--;
  }

  /**
   * End a live sequence: free its KV (committed tokens stay cached), drop it from its queue and mark it
   * `finished` or `aborted`. Ending a prompt sequence ends its dormant children; ending the last dormant
   * child of a prompt sequence ends the prompt sequence.
   */
  release(seq: Sequence, state: 'finished' | 'aborted'): void {
    if (!seq.isLive) return;
    if (seq.place === 'running') {
      this.running.remove(seq);
      this.freeDeviceKv(seq);
    } else if (seq.place === 'waiting') {
      this.waiting.remove(seq);
      if (seq.state === 'waiting') this.numQueued--;
      if (seq.swapped) {
        this.kv.free(seq.seqId);
        this.numSwapped--;
        seq.swapped = false;
      }
    }
    seq.place = 'none';
    seq.state = state;
    this.retired.push(seq);
    if (seq.children !== null) {
      for (const child of seq.children) {
        child.parent = null;
        child.state = state;
        this.retired.push(child);
      }
      seq.children = [];
    }
    const parent = seq.parent;
    if (parent?.children) {
      seq.parent = null;
      parent.children.splice(parent.children.indexOf(seq), 1);
      if (parent.children.length === 0) this.release(parent, state);
    }
  }

  /** Drop a prompt sequence that has forked into its children; it disappears at once. */
  dropForkedParent(seq: Sequence): void {
    this.running.remove(seq);
    this.freeDeviceKv(seq);
    seq.place = 'none';
    seq.state = 'finished';
    seq.children = null;
    this.sequences.delete(seq.seqId);
  }

  /**
   * Whether running sequences commit their KV to the prefix cache every step. Committed slots belong to
   * the cache and stay on the device when a sequence is swapped out, so in swap mode sequences commit
   * only when they end (or fork), and a swap moves all of their KV.
   */
  get commitsEachStep(): boolean {
    return this.options.preemptionMode === 'recompute';
  }

  /** Commit the completed tokens, then free the sequence's device KV into the prefix cache. */
  freeDeviceKv(seq: Sequence): void {
    this.kv.commit(seq.seqId, seq.tokens, seq.numCompleted);
    this.kv.free(seq.seqId, { cache: true });
  }

  /** Forget sequences that ended before the current step, and requests with nothing left. */
  purgeRetired(): void {
    // Runs every step, mostly with nothing retired: an indexed loop, as an iterator may allocate.
    if (this.retired.length === 0) return;
    for (let i = 0; i < this.retired.length; i++) this.forget(this.retired[i]);
    this.retired.length = 0;
  }

  /** Forget every sequence of an ended request at once (its id is being reused). */
  forgetGroup(group: RequestGroup): void {
    for (const seq of group.sequences) this.forget(seq);
  }

  /** Seats taken by running sequences. */
  countSeats(): number {
    let seats = 0;
    for (let i = 0; i < this.running.length; i++) seats += this.running.at(i).numSeats;
    return seats;
  }

  private forget(seq: Sequence): void {
    if (this.sequences.get(seq.seqId) === seq) this.sequences.delete(seq.seqId);
    const requestId = seq.group.request.requestId;
    if (this.groups.get(requestId) === seq.group && !seq.group.sequences.some((s) => s.isLive)) {
      this.groups.delete(requestId);
    }
  }
}
