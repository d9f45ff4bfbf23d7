import type { KvCacheManager } from '@ferrum/interfaces';
import type { ForwardBatch, RowSampling } from '@ferrum/types';

/** Capacities of {@link BatchBuffers}. */
export interface BatchCapacity {
  readonly maxNumTokens: number;
  readonly maxNumSeqs: number;
  readonly maxNumKvTokens: number;
  readonly maxNumSamples: number;
}

type MutableForwardBatch = { -readonly [K in keyof ForwardBatch]: ForwardBatch[K] };

/**
 * The preallocated arrays one {@link ForwardBatch} is written into, reused for every other step, and the
 * batch object that views them, handed out again each time (valid until this buffer is reset for a later
 * step). Sequence b owns rows `qIndptr[b]..qIndptr[b+1]` and context `kvIndices[kvIndptr[b]..kvIndptr[b+1]]`
 * (FlashInfer, page size 1):
 *
 * ```
 * kvIndices for b: | slots of positions 0 .. start-1 (computed) | slots of start .. end-1 (new rows) |
 * rows of b:                                                    | tokenIds / positions / slotMapping |
 * ```
 */
export class BatchBuffers {
  private readonly tokenIds: Int32Array;
  private readonly positions: Int32Array;
  private readonly slotMapping: Int32Array;
  private readonly qIndptr: Int32Array;
  private readonly kvIndptr: Int32Array;
  private readonly kvIndices: Int32Array;
  private readonly sampleRows: Int32Array;
  private readonly sampling: RowSampling[] = [];
  private readonly batch: MutableForwardBatch;
  private numSeqs = 0;
  private numTokens = 0;
  private numSamples = 0;

  constructor(capacity: BatchCapacity) {
    this.tokenIds = new Int32Array(capacity.maxNumTokens);
    this.positions = new Int32Array(capacity.maxNumTokens);
    this.slotMapping = new Int32Array(capacity.maxNumTokens);
    this.qIndptr = new Int32Array(capacity.maxNumSeqs + 1);
    this.kvIndptr = new Int32Array(capacity.maxNumSeqs + 1);
    this.kvIndices = new Int32Array(capacity.maxNumKvTokens);
    this.sampleRows = new Int32Array(capacity.maxNumSamples);
    const empty = new Int32Array(0);
    this.batch = {
      tokenIds: empty,
      positions: empty,
      qIndptr: empty,
      kvIndptr: empty,
      kvIndices: empty,
      slotMapping: empty,
      sampleRows: empty,
      sampling: this.sampling,
      numSeqs: 0,
      numTokens: 0,
    };
  }

  /** Start a new batch; invalidates the previous one. */
  reset(): void {
    this.numSeqs = 0;
    this.numTokens = 0;
    this.numSamples = 0;
  }

  /**
   * Append sequence `seqId` computing positions `[start, end)` of `tokens`, its slots for positions
   * `[0, end)` read from `kv`. Returns the row of its last new token.
   */
  appendSequence(kv: KvCacheManager, seqId: string, tokens: Int32Array, start: number, end: number): number {
    const b = this.numSeqs;
    const row = this.numTokens;
    const kvStart = this.kvIndptr[b];
    const { tokenIds, positions, slotMapping, kvIndices } = this;
    kv.readSlots(seqId, 0, end, kvIndices, kvStart);
    for (let p = start; p < end; p++) {
      const t = row + p - start;
      tokenIds[t] = tokens[p];
      positions[t] = p;
      slotMapping[t] = kvIndices[kvStart + p];
    }
    this.numTokens = row + end - start;
    this.numSeqs = b + 1;
    this.qIndptr[b + 1] = this.numTokens;
    this.kvIndptr[b + 1] = kvStart + end;
    return this.numTokens - 1;
  }

  /** Overwrite the token of `row` (a placeholder, or its value once known). */
  setToken(row: number, tokenId: number): void {
    this.tokenIds[row] = tokenId;
  }

  /** Sample `row` with `sampling`; returns the sample index. */
  addSample(row: number, sampling: RowSampling): number {
    const index = this.numSamples++;
    this.sampleRows[index] = row;
    this.sampling[index] = sampling;
    return index;
  }

  get isEmpty(): boolean {
    return this.numSeqs === 0;
  }

  /**
   * The batch, as views of the buffers. Runtimes read each array's length, so the views are exact; one is
   * made only when its length changed since this buffer's previous batch (in steady decode only kvIndices
   * grows), because views made for every step were most of the planner's garbage.
   */
  view(): ForwardBatch {
    const { batch } = this;
    const b = this.numSeqs;
    const t = this.numTokens;
    this.sampling.length = this.numSamples;
    batch.tokenIds = fit(batch.tokenIds, this.tokenIds, t);
    batch.positions = fit(batch.positions, this.positions, t);
    batch.qIndptr = fit(batch.qIndptr, this.qIndptr, b + 1);
    batch.kvIndptr = fit(batch.kvIndptr, this.kvIndptr, b + 1);
    batch.kvIndices = fit(batch.kvIndices, this.kvIndices, this.kvIndptr[b]);
    batch.slotMapping = fit(batch.slotMapping, this.slotMapping, t);
    batch.sampleRows = fit(batch.sampleRows, this.sampleRows, this.numSamples);
    batch.numSeqs = b;
    batch.numTokens = t;
    return batch;
  }
}

/** `view` when it already has `length` entries, else a new view of the front of `buffer`. */
export function fit(view: Int32Array, buffer: Int32Array, length: number): Int32Array {
  return view.length === length ? view : buffer.subarray(0, length);
}
