import type { KvStorage, ModelExecutor } from '@ferrum/interfaces';
import { FerrumError, type ForwardBatch, type ForwardResult, type ModelInfo } from '@ferrum/types';
import { CudaKvStorage } from './cuda-kv-storage.js';
import type { NativeExecutor, NativeExecutorInfo } from './native-addon.js';
import { native } from './native-error.js';
import { NOTHING_TO_SAMPLE, SamplingPlanner } from './sampling-plan.js';

/** The longest the JS thread is held by one turn of its poll: I/O waits at most this long while steps run. */
const SPIN_TURN_MICROS = 100;

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
  #forwardsInFlight = 0;
  /** Whether the JS thread polls while forwards run (the native `spinWait`); and whether it polls now. */
  readonly #spinWait: boolean;
  #spinning = false;
  /**
   * One turn of the poll: blocks the thread for at most SPIN_TURN_MICROS, or until a result waits, then lets
   * the event loop run (it delivers the result, serves I/O) and comes back while forwards are in flight.
   * A thread kept busy this way runs the engine's work around a step faster than one woken from sleep
   * (native/host-spin.h).
   */
  readonly #spinTurn = () => {
    if (this.#forwardsInFlight === 0 || this.#disposed) {
      this.#spinning = false;
      return;
    }
    this.#native.spinUntilSettled(SPIN_TURN_MICROS);
    setImmediate(this.#spinTurn);
  };

  constructor(executor: NativeExecutor, info: ModelInfo) {
    this.#native = executor;
    this.info = info;
    this.#planner = new SamplingPlanner(info.config.vocabSize, info.config.eosTokenIds, info.maxBatchTokens);
    this.kv = new CudaKvStorage(executor, info.numKvSlots, info.numHostKvSlots);
    this.#spinWait = executor.info().spinWait;
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
    const packed =
      sampling === undefined ? null : this.#planner.pack(sampling, batch.sampleRows, batch.previousTokens);
    this.#forwardsInFlight++;
    if (this.#spinWait && !this.#spinning) {
      this.#spinning = true;
      setImmediate(this.#spinTurn);
    }
    let result: ForwardResult;
    try {
      result = await native(() =>
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
    } finally {
      this.#forwardsInFlight--;
    }
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
