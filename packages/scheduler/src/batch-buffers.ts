import type { ForwardBatch, RowSampling } from '@ferrum/types';

/** Capacities of {@link BatchBuffers}. */
export interface BatchCapacity {
  readonly maxNumTokens: number;
  readonly maxNumSeqs: number;
  readonly maxNumKvTokens: number;
  readonly maxNumSamples: number;
}

/**
 * The preallocated arrays one {@link ForwardBatch} is written into, reused for every other step (the
 * batch handed out views them, so it is valid until this buffer is reset for a later step). Sequence b owns rows
 * `qIndptr[b]..qIndptr[b+1]` and context `kvIndices[kvIndptr[b]..kvIndptr[b+1]]` (FlashInfer, page size 1):
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
  }

  /** Start a new batch; invalidates the previous one. */
  reset(): void {
    this.numSeqs = 0;
    this.numTokens = 0;
    this.numSamples = 0;
  }

  /**
   * Append a sequence computing positions `[start, end)` of `tokens`, whose slots for positions
   * `[0, end)` are `slots[0..end)`. Returns the row of its last new token.
   */
  appendSequence(tokens: Int32Array, slots: Int32Array, start: number, end: number): number {
    const b = this.numSeqs;
    const row = this.numTokens;
    const kvStart = this.kvIndptr[b];
    this.tokenIds.set(tokens.subarray(start, end), row);
    this.slotMapping.set(slots.subarray(start, end), row);
    for (let p = start; p < end; p++) this.positions[row + p - start] = p;
    this.kvIndices.set(slots.subarray(0, end), kvStart);
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

  /** The batch as views of the buffers. */
  view(): ForwardBatch {
    const b = this.numSeqs;
    const t = this.numTokens;
    this.sampling.length = this.numSamples;
    return {
      tokenIds: this.tokenIds.subarray(0, t),
      positions: this.positions.subarray(0, t),
      qIndptr: this.qIndptr.subarray(0, b + 1),
      kvIndptr: this.kvIndptr.subarray(0, b + 1),
      kvIndices: this.kvIndices.subarray(0, this.kvIndptr[b]),
      slotMapping: this.slotMapping.subarray(0, t),
      sampleRows: this.sampleRows.subarray(0, this.numSamples),
      sampling: this.sampling,
      numSeqs: b,
      numTokens: t,
    };
  }
}
