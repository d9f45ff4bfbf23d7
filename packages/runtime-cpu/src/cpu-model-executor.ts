import type { KvStorage, ModelExecutor } from '@ferrum/interfaces';
import { FerrumError, type ForwardBatch, type ForwardResult, type ModelInfo } from '@ferrum/types';
import { CpuKvStorage } from './cpu-kv-storage.js';
import type { NativeModel, NativeModelDescription } from './native-addon.js';
import { native } from './native-error.js';
import { PreviousSamples } from './previous-samples.js';
import { fillRowModes, ROW_GREEDY } from './row-modes.js';
import { SerialQueue } from './serial-queue.js';

const EMPTY_LOGITS = new Float32Array(0);

/** What `forward()` decides when called, before the step waits for its turn. */
interface StagedRows {
  readonly modes: Int32Array;
  readonly hostRows: number;
}

/**
 * A model loaded by the CPU backend. Steps and KV transfers run one at a time on native threads, in call
 * order, so `forward()` may be called again before the previous call settles. Each row's sampling is read
 * when `forward()` is called; `ForwardBatch.previousTokens` rows take what the forward called before sampled
 * natively. The returned arrays belong to the caller.
 */
export class CpuModelExecutor implements ModelExecutor {
  readonly info: ModelInfo;
  readonly kv: KvStorage;
  /** SIMD path and thread count actually in use. */
  readonly description: NativeModelDescription;
  #model: NativeModel | undefined;
  readonly #queue = new SerialQueue();
  readonly #previous = new PreviousSamples();

  constructor(model: NativeModel, info: ModelInfo) {
    this.#model = model;
    this.info = info;
    this.description = model.describe();
    this.kv = new CpuKvStorage(() => this.#live(), this.#queue, info.numKvSlots, info.numHostKvSlots);
  }

  forward(batch: ForwardBatch): Promise<ForwardResult> {
    let staged: StagedRows;
    try {
      staged = this.#stage(batch);
      this.#previous.stage(batch, staged.modes);
    } catch (error) {
      this.#previous.refuse();
      return Promise.reject(error);
    }
    return this.#queue.run(() => this.#forward(batch, staged));
  }

  dispose(): Promise<void> {
    return this.#queue.run(async () => {
      this.#model?.dispose();
      this.#model = undefined;
    });
  }

  /** Row modes are decided at the call: the caller may fill in placeholder outputs while the step waits. */
  #stage(batch: ForwardBatch): StagedRows {
    const numRows = batch.sampleRows.length;
    if (numRows > this.info.maxBatchTokens) {
      throw new FerrumError('invalid_argument', `${numRows} sampled rows exceed maxBatchTokens`);
    }
    const modes = new Int32Array(numRows);
    return { modes, hostRows: fillRowModes(batch.sampling, numRows, modes) };
  }

  async #forward(batch: ForwardBatch, { modes, hostRows }: StagedRows): Promise<ForwardResult> {
    const tokenIds = this.#previous.inputTokens(batch);
    const model = this.#live();
    const numRows = modes.length;
    const vocab = this.info.config.vocabSize;
    const tokens = new Int32Array(numRows);
    const logprobs = new Float32Array(numRows);
    const logits = hostRows > 0 ? new Float32Array(hostRows * vocab) : EMPTY_LOGITS;
    await native(() =>
      model.forward(
        tokenIds,
        batch.positions,
        batch.qIndptr,
        batch.kvIndptr,
        batch.kvIndices,
        batch.slotMapping,
        batch.sampleRows,
        modes,
        batch.numSeqs,
        batch.numTokens,
        tokens,
        logprobs,
        logits,
      ),
    );
    this.#previous.record(tokens);
    return resultOf(modes, hostRows, tokens, logprobs, logits);
  }

  #live(): NativeModel {
    if (this.#model === undefined)
      throw new FerrumError('invalid_argument', 'the model executor was disposed');
    return this.#model;
  }
}

function resultOf(
  modes: Int32Array,
  hostRows: number,
  tokens: Int32Array,
  logprobs: Float32Array,
  logits: Float32Array,
): ForwardResult {
  const anyGreedy = modes.some((mode) => (mode & ROW_GREEDY) !== 0);
  if (hostRows === 0) return { tokens, logprobs };
  const logitsRows = new Int32Array(hostRows);
  let next = 0;
  for (let i = 0; i < modes.length; i++) if ((modes[i] & ROW_GREEDY) === 0) logitsRows[next++] = i;
  return anyGreedy ? { tokens, logprobs, logits, logitsRows } : { tokens, logits, logitsRows };
}
