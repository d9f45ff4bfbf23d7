import type { ModelExecutor, Sampler, SamplerRow, ScheduledStep } from '@ferrum/interfaces';
import type {
  BackendCapabilities,
  ForwardBatch,
  ForwardResult,
  RowSampling,
  TokenLogprob,
} from '@ferrum/types';
import { EarlyLaunchRule } from './early-launch.js';

/** Sampled tokens of one step, indexed like the batch's `sampleRows`. */
export interface StepTokens {
  readonly tokenIds: Int32Array;
  /** Per sample index, the logprob record when the row's request asked for logprobs. */
  readonly logprobs: readonly (TokenLogprob | undefined)[];
}

/**
 * Runs one scheduled step on the executor: KV swaps, the forward, and host sampling for the rows the
 * runtime did not sample (all rows when the backend has no device sampling). On runtimes that take
 * placeholders on the device it may run a step before the one in flight completes (see {@link canRunEarly}).
 */
export class StepRunner {
  /**
   * Result arrays of two steps, used in turn: the engine applies one step's while the next runs. With early
   * launch step N + 2 starts only after N's results were applied, so two sets still suffice.
   */
  private readonly tokenIds: readonly [Int32Array, Int32Array];
  private readonly logprobs: readonly [(TokenLogprob | undefined)[], (TokenLogprob | undefined)[]];
  private turn = 0;
  private readonly hostSamplesAll: boolean;
  private readonly earlyLaunch: EarlyLaunchRule | null;

  constructor(
    private readonly executor: ModelExecutor,
    private readonly sampler: Sampler,
    capabilities: BackendCapabilities,
    maxSamplesPerStep: number,
    private readonly eosTokenIds: readonly number[],
  ) {
    this.tokenIds = [new Int32Array(maxSamplesPerStep), new Int32Array(maxSamplesPerStep)];
    this.logprobs = [[], []];
    this.hostSamplesAll = !capabilities.deviceSampling.includes('greedy');
    this.earlyLaunch = EarlyLaunchRule.of(capabilities);
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
  async run(step: ScheduledStep, early = false): Promise<StepTokens> {
    const turn = this.turn;
    this.turn = 1 - turn;
    const numSamples = step.batch.sampleRows.length;
    const tokenIds = this.tokenIds[turn].subarray(0, numSamples);
    const logprobs = this.logprobs[turn];
    logprobs.length = numSamples;
    logprobs.fill(undefined);
    const { kv } = this.executor;
    for (const plan of step.swapOut) await kv.swapOut(plan.deviceSlots, plan.hostSlots);
    for (const plan of step.swapIn) await kv.swapIn(plan.hostSlots, plan.deviceSlots);
    if (step.batch.numTokens === 0) return { tokenIds, logprobs };
    const result = await this.executor.forward(early ? withPreviousTokens(step) : step.batch);
    const rows = step.batch.sampling ?? [];
    this.takeDeviceSamples(result, rows, tokenIds, logprobs);
    this.sampleOnHost(result, rows, tokenIds, logprobs);
    return { tokenIds, logprobs };
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
        logprobs[i] = { tokenId: out[i], logprob: result.logprobs[i] };
      }
    }
  }

  private sampleOnHost(
    result: ForwardResult,
    rows: readonly RowSampling[],
    out: Int32Array,
    logprobs: (TokenLogprob | undefined)[],
  ): void {
    const hostRows = this.hostSamplesAll ? null : result.logitsRows;
    const count = hostRows ? hostRows.length : out.length;
    if (count === 0 || !result.logits) return;
    const samplerRows: SamplerRow[] = new Array(count);
    for (let j = 0; j < count; j++) samplerRows[j] = this.toSamplerRow(rows[hostRows ? hostRows[j] : j]);
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

  private toSamplerRow(row: RowSampling): SamplerRow {
    return {
      seed: row.seed,
      context: {
        requestId: row.requestId,
        params: row.params,
        promptTokenIds: row.promptTokenIds,
        outputTokenIds: row.outputTokenIds,
        eosTokenIds: this.eosTokenIds,
      },
    };
  }
}

/** The step's batch, its placeholder rows to be taken from the previous forward's samples. */
function withPreviousTokens(step: ScheduledStep): ForwardBatch {
  const { placeholders } = step;
  if (placeholders === undefined || placeholders.rows.length === 0) return step.batch;
  return { ...step.batch, previousTokens: placeholders };
}
