import type { ModelExecutor, Sampler, ScheduledStep } from '@ferrum/interfaces';
import {
  type BackendCapabilities,
  type ForwardBatch,
  type ForwardResult,
  MAX_DEVICE_TOP_LOGPROBS,
  type RowSampling,
  type TokenLogprob,
} from '@ferrum/types';
import { EarlyLaunchRule } from './early-launch.js';
import { HostSamplerRows } from './host-sampler-rows.js';

type TopLogprob = NonNullable<TokenLogprob['top']>[number];

/** Sampled tokens of one step, indexed like the batch's `sampleRows`. */
export interface StepTokens {
  readonly tokenIds: Int32Array;
  /** Per sample index, the logprob record when the row's request asked for logprobs. */
  readonly logprobs: readonly (TokenLogprob | undefined)[];
}

type MutableBatch = { -readonly [K in keyof ForwardBatch]: ForwardBatch[K] };

/** What one turn of the runner holds for its step: reused, like the scheduler's two plans. */
interface Turn {
  step: ScheduledStep | null;
  /** The step's batch with `previousTokens`, for an early launch; made on the first one. */
  early: MutableBatch | null;
  readonly buffer: Int32Array;
  readonly result: { tokenIds: Int32Array; readonly logprobs: (TokenLogprob | undefined)[] };
  /** `forward()`'s continuation, made once so that a step allocates no closure. */
  readonly settle: (result: ForwardResult) => StepTokens;
}

const NO_ROWS: readonly RowSampling[] = [];

/**
 * Runs one scheduled step on the executor: KV swaps, the forward, and host sampling for the rows the
 * runtime did not sample (all rows when the backend has no device sampling). On runtimes that take
 * placeholders on the device it may run a step before the one in flight completes (see {@link canRunEarly}).
 *
 * A steady step allocates only the Promise of its result: everything else is held by two turns used in
 * alternation (V8's young-generation pauses land on the step loop's thread).
 */
export class StepRunner {
  /**
   * Two steps' state, used in turn: the engine applies one step's results while the next runs. With early
   * launch step N + 2 starts only after N's results were applied, so two sets still suffice.
   */
  private readonly turns: readonly [Turn, Turn];
  private turn = 0;
  private readonly hostSamplesAll: boolean;
  private readonly earlyLaunch: EarlyLaunchRule | null;
  private readonly hostRows: HostSamplerRows;

  constructor(
    private readonly executor: ModelExecutor,
    private readonly sampler: Sampler,
    capabilities: BackendCapabilities,
    maxSamplesPerStep: number,
    eosTokenIds: readonly number[],
  ) {
    this.turns = [this.createTurn(maxSamplesPerStep), this.createTurn(maxSamplesPerStep)];
    this.hostSamplesAll = !capabilities.deviceSampling.includes('greedy');
    this.earlyLaunch = EarlyLaunchRule.of(capabilities);
    this.hostRows = new HostSamplerRows(eosTokenIds);
  }

  /**
   * Whether `step`, planned while `inFlight` runs, may run before `inFlight` completes: its placeholder
   * rows then take `inFlight`'s samples on the device (see {@link EarlyLaunchRule}).
   */
  canRunEarly(step: ScheduledStep, inFlight: ScheduledStep): boolean {
    return this.earlyLaunch?.allows(step, inFlight) ?? false;
  }

  /**
   * Run `step`. The result stays valid until the second `run()` after this one: the arrays of two
   * consecutive steps are distinct. `early`: the step was planned while the step in flight runs and
   * {@link canRunEarly} allowed it; its placeholder rows take that step's samples on the device. Such a
   * step has no swaps, so its forward is called before this returns, ahead of `complete()` of the step in
   * flight (which writes into this step's placeholders and sampling records).
   */
  run(step: ScheduledStep, early = false): Promise<StepTokens> {
    const turn = this.turns[this.turn];
    this.turn = 1 - this.turn;
    try {
      this.begin(turn, step);
      if (step.swapOut.length > 0 || step.swapIn.length > 0) return this.swapThenForward(turn, early);
      return this.forward(turn, early);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private begin(turn: Turn, step: ScheduledStep): void {
    const numSamples = step.batch.sampleRows.length;
    const { result } = turn;
    turn.step = step;
    if (result.tokenIds.length !== numSamples) result.tokenIds = turn.buffer.subarray(0, numSamples);
    result.logprobs.length = numSamples;
    result.logprobs.fill(undefined);
  }

  private async swapThenForward(turn: Turn, early: boolean): Promise<StepTokens> {
    const { kv } = this.executor;
    const step = turn.step!;
    for (const plan of step.swapOut) await kv.swapOut(plan.deviceSlots, plan.hostSlots);
    for (const plan of step.swapIn) await kv.swapIn(plan.hostSlots, plan.deviceSlots);
    return this.forward(turn, early);
  }

  private forward(turn: Turn, early: boolean): Promise<StepTokens> {
    const { batch } = turn.step!;
    if (batch.numTokens === 0) return Promise.resolve(turn.result);
    return this.executor.forward(early ? withPreviousTokens(turn, batch) : batch).then(turn.settle);
  }

  private createTurn(maxSamplesPerStep: number): Turn {
    const buffer = new Int32Array(maxSamplesPerStep);
    const turn: Turn = {
      step: null,
      early: null,
      buffer,
      result: { tokenIds: buffer.subarray(0, 0), logprobs: [] },
      settle: (forwarded) => {
        const rows = turn.step!.batch.sampling ?? NO_ROWS;
        const { tokenIds, logprobs } = turn.result;
        this.takeDeviceSamples(forwarded, rows, tokenIds, logprobs);
        this.sampleOnHost(forwarded, rows, tokenIds, logprobs);
        return turn.result;
      },
    };
    return turn;
  }

  private takeDeviceSamples(
    result: ForwardResult,
    rows: readonly RowSampling[],
    out: Int32Array,
    logprobs: (TokenLogprob | undefined)[],
  ): void {
    if (this.hostSamplesAll) return;
    for (let i = 0; i < out.length; i++) {
      out[i] = result.tokens[i];
      const row = rows[i];
      if (row && row.params.logprobs !== null && result.logprobs) {
        const top = row.params.logprobs > 0 ? deviceTopLogprobs(result, i, row.params.logprobs) : undefined;
        logprobs[i] = top
          ? { tokenId: out[i], logprob: result.logprobs[i], top }
          : { tokenId: out[i], logprob: result.logprobs[i] };
      }
    }
  }

  private sampleOnHost(
    result: ForwardResult,
    rows: readonly RowSampling[],
    out: Int32Array,
    logprobs: (TokenLogprob | undefined)[],
  ): void {
    const hostRows = this.hostSamplesAll ? null : (result.logitsRows ?? null);
    const count = hostRows ? hostRows.length : out.length;
    if (count === 0 || !result.logits) return;
    const samplerRows = this.hostRows.bind(rows, hostRows, count);
    const vocabSize = this.executor.info.config.vocabSize;
    const sampled = this.sampler.sample(result.logits, vocabSize, samplerRows);
    for (let j = 0; j < count; j++) {
      const i = hostRows ? hostRows[j] : j;
      out[i] = sampled.tokenIds[j];
      if (samplerRows[j].context.params.logprobs === null) continue;
      // The sampler reuses its output arrays on the next call; chunks outlive the step.
      const top = sampled.topLogprobs[j]?.map((e) => ({ tokenId: e.tokenId, logprob: e.logprob }));
      logprobs[i] = top
        ? { tokenId: out[i], logprob: sampled.logprobs[j], top }
        : { tokenId: out[i], logprob: sampled.logprobs[j] };
    }
  }
}

/**
 * Row `i`'s alternatives as the runtime found them (`ForwardResult.topLogprobs`), or undefined where it did not
 * (the row's logits went to the host, which then lists them).
 */
function deviceTopLogprobs(result: ForwardResult, i: number, n: number): TopLogprob[] | undefined {
  const found = result.topLogprobs;
  if (found === undefined) return undefined;
  const from = i * MAX_DEVICE_TOP_LOGPROBS;
  const top: TopLogprob[] = [];
  for (let k = 0; k < n && found.tokenIds[from + k] >= 0; k++) {
    top.push({ tokenId: found.tokenIds[from + k], logprob: found.logprobs[from + k] });
  }
  return top;
}

/**
 * The step's batch, its placeholder rows to be taken from the previous forward's samples: the turn's own
 * copy of the batch's fields (the scheduler's batch stays as planned).
 */
function withPreviousTokens(turn: Turn, batch: ForwardBatch): ForwardBatch {
  const placeholders = turn.step!.placeholders;
  if (placeholders === undefined || placeholders.rows.length === 0) return batch;
  const { early } = turn;
  if (early === null) {
    turn.early = { ...batch, previousTokens: placeholders };
    return turn.early;
  }
  early.tokenIds = batch.tokenIds;
  early.positions = batch.positions;
  early.qIndptr = batch.qIndptr;
  early.kvIndptr = batch.kvIndptr;
  early.kvIndices = batch.kvIndices;
  early.slotMapping = batch.slotMapping;
  early.sampleRows = batch.sampleRows;
  early.sampling = batch.sampling;
  early.numSeqs = batch.numSeqs;
  early.numTokens = batch.numTokens;
  early.previousTokens = placeholders;
  return early;
}
