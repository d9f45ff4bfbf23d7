import type { ScheduledStep, Scheduler, SequenceState, SequenceUpdate } from '@ferrum/interfaces';
import type { TokenLogprob } from '@ferrum/types';
import type { StepRunner, StepTokens } from './step-runner.js';

/** Awaited to let the microtasks queued before it (the streams' readers) run first. */
const READERS_TURN = Promise.resolve();

/** What the loop tells its engine. */
export interface StepLoopHooks {
  /** `step` went to the runtime. */
  onLaunch(step: ScheduledStep): void;
  /** A step completed (with async scheduling this runs while the next step runs). */
  onUpdates(updates: readonly SequenceUpdate[], logprobs: readonly (TokenLogprob | undefined)[]): void;
  /** Work is left, but nothing can be scheduled while nothing runs. */
  onUnschedulable(): void;
  /** A step, or the handling of its results, failed; nothing is in flight any more. */
  onError(error: unknown): void;
}

/** A step handed to the runtime, and its result to come. */
interface LaunchedStep {
  step: ScheduledStep;
  result: Promise<StepTokens>;
}

/**
 * The engine's step loop. The loop only awaits the runtime's Promises, so the event loop stays free while
 * steps run natively. With async scheduling (vLLM's; SGLang's overlap scheduler) it plans step N + 1 while
 * step N runs, its decodes holding placeholders for N's tokens. Then:
 * - early launch, when the runtime takes placeholders on the device (`previousTokens`) and the step
 *   qualifies ({@link StepRunner.canRunEarly}): N + 1 is launched at once, then N is awaited, completed and
 *   streamed while N + 1 runs; the runtime never waits for the host between steps. A sequence that ends in
 *   N keeps its row in N + 1, computed and ignored by `complete(N + 1)` (its KV was freed when it ended).
 * - otherwise: N is awaited and completed (which writes N's tokens into N + 1's placeholders), N + 1 is
 *   launched, and only then N's tokens are streamed: between two steps the runtime waits for `complete()`.
 * In both, N's streams' readers run before step N + 2 is planned (they wait on the loop, not the runtime).
 * Without async scheduling each step is completed and streamed before the next is planned (the plain loop,
 * kept as the reference).
 */
export class StepLoop {
  private readonly overlap: boolean;
  /**
   * Records of launched steps, used in turn so that a step allocates none: at most two are live (the step
   * in flight and one launched early), and a record is reused only after its step was read.
   */
  private readonly launched: LaunchedStep[] = [];
  private numLaunched = 0;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly stepRunner: StepRunner,
    asyncScheduling: boolean,
    private readonly hooks: StepLoopHooks,
  ) {
    this.overlap = asyncScheduling && scheduler.supportsAsyncScheduling === true;
  }

  /** Run steps while there is work. Resolves once nothing is in flight; never rejects (see `onError`). */
  async run(): Promise<void> {
    const { scheduler } = this;
    let current: LaunchedStep | null = null;
    let early: LaunchedStep | null = null;
    try {
      current = this.launchNext();
      while (current !== null) {
        const { step, result } = current;
        // Build step N + 1 while step N runs; its decodes hold placeholders for N's tokens.
        const planned = this.overlap && scheduler.hasWork() ? scheduler.schedule() : null;
        if (planned !== null && this.stepRunner.canRunEarly(planned, step))
          early = this.launch(planned, true);
        const { tokenIds, logprobs } = await result;
        const updates = scheduler.complete(step, tokenIds);
        if (early !== null) {
          current = early;
          early = null;
        } else if (this.overlap) {
          current = planned !== null && this.needsRun(planned) ? this.launch(planned) : this.launchNext();
        } else {
          this.hooks.onUpdates(updates, logprobs);
          current = this.launchNext();
          continue;
        }
        this.hooks.onUpdates(updates, logprobs);
        // A step runs: the streams' readers take these tokens before the step after it is planned, which
        // would otherwise delay every chunk (a first token too) by a step's planning and launch.
        if (current !== null) await READERS_TURN;
      }
    } catch (error) {
      // The runtime finishes the steps it was given before the requests fail.
      await current?.result.catch(() => undefined);
      await early?.result.catch(() => undefined);
      this.hooks.onError(error);
    }
  }

  /** Plan a step with nothing in flight and launch it; null when no work is left or none can run. */
  private launchNext(): LaunchedStep | null {
    if (!this.scheduler.hasWork()) return null;
    const step = this.scheduler.schedule();
    if (step === null) {
      this.hooks.onUnschedulable();
      return null;
    }
    return this.launch(step);
  }

  private launch(step: ScheduledStep, early = false): LaunchedStep {
    const result = this.stepRunner.run(step, early);
    this.hooks.onLaunch(step);
    const index = this.numLaunched++ % 2;
    const launched = this.launched[index] ?? { step, result };
    this.launched[index] = launched;
    launched.step = step;
    launched.result = result;
    return launched;
  }

  /**
   * Whether a step planned ahead still has work: every sequence in it may have ended meanwhile (e.g. on
   * EOS in the step before), leaving only rows whose results would be ignored. Skipped, it needs no
   * `complete()`.
   */
  private needsRun(step: ScheduledStep): boolean {
    if (step.swapOut.length > 0 || step.swapIn.length > 0) return true;
    for (let b = 0; b < step.seqIds.length; b++) {
      if (isLiveState(this.scheduler.stateOf(step.seqIds[b]))) return true;
    }
    return false;
  }
}

function isLiveState(state: SequenceState | undefined): boolean {
  return state !== undefined && state !== 'finished' && state !== 'aborted';
}
