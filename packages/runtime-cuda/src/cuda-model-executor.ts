import type { KvStorage, ModelExecutor } from '@ferrum/interfaces';
import { FerrumError, type ForwardBatch, type ForwardResult, type ModelInfo } from '@ferrum/types';
import { CudaKvStorage } from './cuda-kv-storage.js';
import type { NativeExecutor, NativeExecutorInfo } from './native-addon.js';
import { native } from './native-error.js';
import { NOTHING_TO_SAMPLE, SamplingPlanner } from './sampling-plan.js';

/**
 * A model loaded by the CUDA backend. Each call enqueues work on the executor's native worker thread, in
 * call order (steps and KV transfers alike); the Promise settles after a CUDA event wait on that thread.
 * Two forwards may be in flight: the second is staged while the first runs (ForwardBatch.previousTokens).
 * The returned arrays belong to the caller.
 */
export class CudaModelExecutor implements ModelExecutor {
  readonly info: ModelInfo;
  readonly kv: KvStorage;
  readonly #native: NativeExecutor;
  readonly #planner: SamplingPlanner;
  #disposed = false;

  constructor(executor: NativeExecutor, info: ModelInfo) {
    this.#native = executor;
    this.info = info;
    this.#planner = new SamplingPlanner(info.config.vocabSize, info.config.eosTokenIds);
    this.kv = new CudaKvStorage(executor, info.numKvSlots, info.numHostKvSlots);
  }

  /** Pool and weight sizes as allocated. */
  memory(): NativeExecutorInfo {
    return this.#native.info();
  }

  async forward(batch: ForwardBatch): Promise<ForwardResult> {
    if (this.#disposed) throw new FerrumError('invalid_argument', 'the model executor was disposed');
    const { sampling } = batch;
    if (sampling !== undefined && sampling.length !== batch.sampleRows.length) {
      throw new FerrumError('invalid_argument', 'forward: sampling must have one entry per sampled row');
    }
    const packed = sampling === undefined ? null : this.#planner.pack(sampling);
    const result = await native(() =>
      this.#native.forward({
        tokenIds: batch.tokenIds,
        positions: batch.positions,
        qIndptr: batch.qIndptr,
        kvIndptr: batch.kvIndptr,
        kvIndices: batch.kvIndices,
        slotMapping: batch.slotMapping,
        sampleRows: batch.sampleRows,
        numSeqs: batch.numSeqs,
        numTokens: batch.numTokens,
        sampling: packed,
        previousTokens: batch.previousTokens,
      }),
    );
    // Read from the result, not from `packed`: the planner's arrays may already hold the next step's rows.
    const empty = result.tokens.indexOf(NOTHING_TO_SAMPLE);
    if (empty >= 0) {
      throw new FerrumError(
        'invalid_argument',
        `sampled row ${empty}: every token is masked, nothing is left to sample`,
      );
    }
    return result;
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await native(() => this.#native.dispose());
  }
}
