import type { Sequence } from './sequence.js';
import type { SequenceRegistry } from './sequence-registry.js';
import type { StepPlan } from './step-plan.js';

/**
 * Decides one step, in four passes over sequences kept in priority order (vLLM's policy):
 * 0. a waiting request of strictly better priority than the worst running one preempts running work
 *    until its first chunk (and every running decode) fits;
 * 1. every running decode gets one slot; when the pool is dry the worst running sequence not yet in
 *    this step is preempted (possibly the decode itself);
 * 2. running prefills continue with the largest chunk the budgets and the pool allow;
 * 3. waiting sequences are admitted in order (fresh or recompute: prefix match then first chunk; swapped:
 *    swap-in), each leaving the watermark free, until one does not fit. Skipped when pass 1 or 2 had to
 *    preempt: new work would only be preempted in turn.
 *
 * Planned while the previous step is in flight (overlap), a sequence whose last row that step samples
 * decodes its placeholder (see {@link Sequence.canRunAhead} for when it waits instead), and one whose
 * mid-prompt chunk it computes gets its next chunk. Sequences of the step in flight may be preempted:
 * the KV they free goes only to steps planned later, which the runtime runs after it.
 */
export class StepPlanner {
  private pressured = false;
  private plan!: StepPlan;

  constructor(private readonly registry: SequenceRegistry) {}

  /** Plan the next step into `plan` (begun by the caller). */
  run(plan: StepPlan): void {
    this.plan = plan;
    this.pressured = false;
    this.preemptForPriority();
    this.scheduleDecodes();
    this.scheduleRunningPrefills();
    if (!this.pressured) this.admitWaiting();
  }

  private preemptForPriority(): void {
    const { waiting, running, options } = this.registry;
    if (waiting.length === 0 || this.worseVictim(waiting.at(0)) === undefined) return;
    let numDecodes = 0;
    for (let i = 0; i < running.length; i++) if (isDecode(running.at(i))) numDecodes++;
    // What the better-priority waiting sequences accepted so far will need: seats, slots, tokens.
    const wanted = { seats: 0, slots: numDecodes, tokens: numDecodes };
    for (let i = 0; i < waiting.length && wanted.tokens < options.maxNumBatchedTokens; i++) {
      const seq = waiting.at(i);
      if (seq.stepMark === this.plan.stepNo || this.worseVictim(seq) === undefined) break;
      const tokens = seq.swapped ? 1 : Math.min(seq.numTokens, options.maxNumBatchedTokens - wanted.tokens);
      const slots = seq.swapped ? seq.numSwappedSlots + 1 : tokens;
      for (
        let victim = this.worseVictim(seq);
        victim !== undefined && !this.fitsWanted(seq, wanted, slots);
        victim = this.worseVictim(seq)
      ) {
        if (isDecode(victim)) {
          wanted.slots--;
          wanted.tokens--;
        }
        this.registry.preempt(victim, this.plan);
      }
      if (!this.fitsWanted(seq, wanted, slots)) break;
      wanted.seats += seq.numSeats;
      wanted.slots += slots;
      wanted.tokens += tokens;
    }
  }

  /** The sequence to preempt for waiting `seq`: the next victim, when its priority is worse. */
  private worseVictim(seq: Sequence): Sequence | undefined {
    const victim = this.pickVictim();
    return victim !== undefined && victim.priority > seq.priority ? victim : undefined;
  }

  private fitsWanted(seq: Sequence, wanted: { seats: number; slots: number }, slots: number): boolean {
    const { kv, options } = this.registry;
    return (
      this.plan.numSeats + wanted.seats + seq.numSeats <= options.maxNumSeqs &&
      kv.canAllocate(wanted.slots + slots + options.watermarkSlots)
    );
  }

  private scheduleDecodes(): void {
    const { running } = this.registry;
    for (let i = 0; i < running.length; ) {
      const seq = running.at(i);
      if (isDecode(seq) && seq.stepMark !== this.plan.stepNo && this.plan.fits(seq, 1)) {
        if (this.reserve(seq, 1, false) > 0) this.plan.addDecode(seq);
        // A decode that preempted itself left the queue: the next sequence is now at index i.
        if (seq.place !== 'running') continue;
      }
      i++;
    }
  }

  private scheduleRunningPrefills(): void {
    const { running, options } = this.registry;
    for (let i = 0; i < running.length && this.plan.numTokensLeft > 0; ) {
      const seq = running.at(i);
      if (!seq.decodesNext && seq.stepMark !== this.plan.stepNo) {
        const chunk = this.plan.chunkFor(seq);
        const whole = chunk === seq.numTokens - seq.numComputed;
        if (chunk > 0 && (whole || options.chunkedPrefill)) {
          const granted = this.reserve(seq, chunk, options.chunkedPrefill);
          if (granted > 0) this.plan.addPrefill(seq, granted);
          if (seq.place !== 'running') continue;
        }
      }
      i++;
    }
  }

  /**
   * Allocate `numTokens` slots to running `seq`, or fewer (at least one) when `partial` and the pool is
   * short, preempting the worst running sequences not yet in this step until it fits. Returns how many were
   * allocated; 0 when `seq` itself had to be preempted.
   */
  private reserve(seq: Sequence, numTokens: number, partial: boolean): number {
    const { kv } = this.registry;
    let granted = numTokens;
    while (!kv.canAllocate(granted)) {
      const available = kv.numAvailableSlots();
      if (partial && available > 0) {
        granted = available;
        break;
      }
      this.pressured = true;
      const victim = this.pickVictim();
      if (victim === undefined) return 0;
      // Alone, preempting itself frees nothing it will not need again on re-admission: what blocks it
      // is the prefix swapped sequences keep locked (see abandonWorstSwap).
      if (victim === seq && this.registry.running.length === 1 && this.abandonWorstSwap()) continue;
      this.registry.preempt(victim, this.plan);
      if (victim === seq) return 0;
    }
    kv.allocate(seq.seqId, granted);
    return granted;
  }

  /**
   * The worst running sequence that this step has not planned yet. Not a prompt sequence whose fork the
   * step in flight samples: the fork needs its KV on the device.
   */
  private pickVictim(): Sequence | undefined {
    const { running } = this.registry;
    for (let i = running.length - 1; i >= 0; i--) {
      const seq = running.at(i);
      if (seq.stepMark !== this.plan.stepNo && (seq.children === null || seq.numPlaceholders === 0)) {
        return seq;
      }
    }
    return undefined;
  }

  private admitWaiting(): void {
    const { waiting, running, options } = this.registry;
    while (waiting.length > 0 && this.plan.numTokensLeft > 0) {
      const seq = waiting.at(0);
      if (seq.stepMark === this.plan.stepNo) break;
      if (this.plan.numSeats + seq.numSeats > options.maxNumSeqs) break;
      // With nothing running there is nothing to protect, and a long prompt must be able to start.
      const alone = running.length === 0;
      const admitted = seq.swapped ? this.admitSwapped(seq, alone) : this.admitFresh(seq, alone);
      if (admitted) this.plan.numSeats += seq.numSeats;
      else if (!alone || !this.abandonWorstSwap()) break;
    }
  }

  /**
   * Swapped sequences keep their cached prefix locked on the device. When nothing runs and the head of
   * the queue still does not fit, those locks are what blocks it: the worst swapped sequence gives up its
   * KV and will be recomputed instead. Returns false when no sequence is swapped.
   */
  private abandonWorstSwap(): boolean {
    const { waiting } = this.registry;
    for (let i = waiting.length - 1; i >= 0; i--) {
      const seq = waiting.at(i);
      if (seq.swapped) {
        this.registry.abandonSwap(seq);
        return true;
      }
    }
    return false;
  }

  /** Start (or restart after recompute preemption) a sequence: prefix match, then its first chunk. */
  private admitFresh(seq: Sequence, alone: boolean): boolean {
    const { kv, options } = this.registry;
    const cached = kv.addSequence(seq.seqId, seq.tokens.subarray(0, seq.numTokens));
    seq.numComputed = cached;
    if (seq.group.numCachedPromptTokens < 0)
      seq.group.numCachedPromptTokens = Math.min(cached, seq.numPromptTokens);
    let chunk = this.plan.chunkFor(seq);
    if (options.chunkedPrefill && alone) chunk = Math.min(chunk, kv.numAvailableSlots());
    const watermark = alone ? 0 : options.watermarkSlots;
    const whole = chunk === seq.numTokens - cached;
    if (chunk <= 0 || (!whole && !options.chunkedPrefill) || !kv.canAllocate(chunk + watermark)) {
      kv.free(seq.seqId, { cache: true });
      seq.numComputed = 0;
      return false;
    }
    kv.allocate(seq.seqId, chunk);
    this.registry.admit(seq);
    seq.setState('prefilling');
    this.plan.addPrefill(seq, chunk);
    return true;
  }

  /** Bring a swapped sequence back and give it its next chunk (one token when it was decoding). */
  private admitSwapped(seq: Sequence, alone: boolean): boolean {
    const { kv, options } = this.registry;
    const watermark = alone ? 0 : options.watermarkSlots;
    const chunk = this.plan.chunkFor(seq);
    const whole = chunk === seq.numTokens - seq.numComputed;
    if (chunk <= 0 || (!whole && !options.chunkedPrefill)) return false;
    if (!kv.canSwapIn(seq.seqId) || !kv.canAllocate(seq.numSwappedSlots + chunk + watermark)) return false;
    this.plan.swapIn.push(kv.swapIn(seq.seqId));
    kv.allocate(seq.seqId, chunk);
    const state = seq.resumeState;
    this.registry.admit(seq);
    seq.setState(state);
    if (state === 'decoding') this.plan.addDecode(seq);
    else this.plan.addPrefill(seq, chunk);
    return true;
  }
}

/** A running sequence whose work this step is one decode token. */
function isDecode(seq: Sequence): boolean {
  return seq.decodesNext && seq.canRunAhead;
}
