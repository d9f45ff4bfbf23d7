import type { KvStorage, ModelExecutor } from '@ferrum/interfaces';
import { FerrumError, type ForwardBatch, type ForwardResult, type ModelInfo } from '@ferrum/types';
import { CpuKvStorage } from './cpu-kv-storage.js';
import type { NativeModel, NativeModelDescription } from './native-addon.js';
import { native } from './native-error.js';
import { fillRowModes, ROW_GREEDY } from './row-modes.js';
import { SerialQueue } from './serial-queue.js';

const EMPTY_LOGITS = new Float32Array(0);

/**
 * A model loaded by the CPU backend. Steps and KV transfers run one at a time on native threads, in call
 * order; the returned arrays belong to the caller.
 */
export class CpuModelExecutor implements ModelExecutor {
  readonly info: ModelInfo;
  readonly kv: KvStorage;
  /** SIMD path and thread count actually in use. */
  readonly description: NativeModelDescription;
  #model: NativeModel | undefined;
  readonly #queue = new SerialQueue();
  // Reused every step: the queue guarantees the previous step finished reading it.
  readonly #rowModes: Int32Array;

  constructor(model: NativeModel, info: ModelInfo) {
    this.#model = model;
    this.info = info;
    this.description = model.describe();
    this.#rowModes = new Int32Array(info.maxBatchTokens);
    this.kv = new CpuKvStorage(() => this.#live(), this.#queue, info.numKvSlots, info.numHostKvSlots);
  }

  forward(batch: ForwardBatch): Promise<ForwardResult> {
    return this.#queue.run(() => this.#forward(batch));
  }

  dispose(): Promise<void> {
    return this.#queue.run(async () => {
      this.#model?.dispose();
      this.#model = undefined;
    });
  }

  async #forward(batch: ForwardBatch): Promise<ForwardResult> {
    const model = this.#live();
    const numRows = batch.sampleRows.length;
    if (numRows > this.#rowModes.length) {
      throw new FerrumError('invalid_argument', `${numRows} sampled rows exceed maxBatchTokens`);
    }
    const modes = this.#rowModes.subarray(0, numRows);
    const hostRows = fillRowModes(batch.sampling, numRows, modes);
    const vocab = this.info.config.vocabSize;
    const tokens = new Int32Array(numRows);
    const logprobs = new Float32Array(numRows);
    const logits = hostRows > 0 ? new Float32Array(hostRows * vocab) : EMPTY_LOGITS;
    await native(() =>
      model.forward(
        batch.tokenIds,
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
