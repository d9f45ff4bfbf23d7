import {
  FerrumError,
  hasPenalties,
  MAX_DEVICE_TOP_LOGPROBS,
  numOutputTokensOf,
  type RowSampling,
} from '@ferrum/types';
import type { NativeSampling } from './native-addon.js';

/** Row flags shared with native/kernels/kernels.h. */
export const SAMPLE_GREEDY = 1;
export const SAMPLE_PROCESSED_LOGPROBS = 2;
export const SAMPLE_ALLOWED_ONLY = 4;
export const SAMPLE_SKIP = 8;
export const SAMPLE_COUNT_INPUT = 16;
/** A row's flags hold its number of alternatives (`logprobs` > 0) from this bit on (kernels.h kSampleTopShift). */
export const SAMPLE_TOP_SHIFT = 8;
/** Floats a row: temperature, top-p, min-p, repetition, presence and frequency penalties (kernels.h kRowFloats). */
export const ROW_FLOATS = 6;
/** The device's token for a row whose every token was masked (kernels.h kNothingToSample). */
export const NOTHING_TO_SAMPLE = -2;
const ADJ_REPETITION = 1;
const ADJ_BANNED = 2;
/** The id is among the outputs counted here: its presence penalty is charged. */
const ADJ_IN_OUTPUT = 4;

/**
 * Packs a step's {@link RowSampling} rows into the flat arrays the device sampling kernel reads:
 * ROW_FLOATS floats and four ints per row, plus per row a sparse list of adjusted token ids (bans, logit
 * bias before the repetition penalty, presence/frequency after it, as @ferrum/sampler orders them) and a
 * sorted allowed-ids list. A row whose input token is a placeholder (ForwardBatch.previousTokens) and that
 * has penalties leaves that token, its newest output, to the device (SAMPLE_COUNT_INPUT: the kernel counts
 * the token it embedded), so the record's value for it is never read. Buffers grow on demand and are
 * reused: the returned arrays are valid until the next `pack`. Cost is O(prompt + output + listed ids) per
 * row, never O(vocab). It runs every step on the engine's thread, so a plain row allocates nothing: the
 * returned record and its views are reused while their lengths hold, and a row's outputs are read only for
 * penalties.
 */
export class SamplingPlanner {
  private readonly entryOf: Int32Array;
  private rowFloats = new Float32Array(0);
  private rowInts = new Int32Array(0);
  private adjOffsets = new Int32Array(1);
  private adjIds = new Int32Array(0);
  private adjPre = new Float32Array(0);
  private adjPost = new Float32Array(0);
  private adjFlags = new Int32Array(0);
  private allowedOffsets = new Int32Array(1);
  private allowedIds = new Int32Array(0);
  private numAdj = 0;
  private numAllowed = 0;
  /** 1 for the batch rows that hold a placeholder, during a `pack` (0 between calls). */
  private readonly isPlaceholder: Uint8Array;
  private readonly packed: { -readonly [K in keyof NativeSampling]: NativeSampling[K] };

  /** `maxBatchTokens`: the most rows a batch has (rows past it are left to the runtime's checks). */
  constructor(
    private readonly vocabSize: number,
    private readonly eosTokenIds: readonly number[],
    maxBatchTokens: number,
  ) {
    this.entryOf = new Int32Array(vocabSize).fill(-1);
    this.isPlaceholder = new Uint8Array(maxBatchTokens);
    this.packed = {
      rowFloats: this.rowFloats,
      rowInts: this.rowInts,
      adjOffsets: this.adjOffsets,
      adjIds: this.adjIds,
      adjPre: this.adjPre,
      adjPost: this.adjPost,
      adjFlags: this.adjFlags,
      allowedOffsets: this.allowedOffsets,
      allowedIds: this.allowedIds,
    };
  }

  /**
   * `rows[i]` samples batch row `sampleRows[i]`; `previousTokens`: the batch's placeholder rows, if any.
   * @throws FerrumError `invalid_argument` for a token id outside the vocabulary.
   */
  pack(
    rows: readonly RowSampling[],
    sampleRows: Int32Array,
    previousTokens?: { readonly rows: Int32Array },
  ): NativeSampling {
    const numRows = rows.length;
    this.ensureRows(numRows);
    this.numAdj = 0;
    this.numAllowed = 0;
    const placeholders = previousTokens?.rows;
    if (placeholders !== undefined) this.markPlaceholders(placeholders, 1);
    try {
      for (let r = 0; r < numRows; r++) this.packRow(r, rows[r], sampleRows[r]);
    } finally {
      if (placeholders !== undefined) this.markPlaceholders(placeholders, 0);
    }
    const { packed, numAdj, numAllowed } = this;
    packed.rowFloats = front(packed.rowFloats, this.rowFloats, numRows * ROW_FLOATS);
    packed.rowInts = front(packed.rowInts, this.rowInts, numRows * 4);
    packed.adjOffsets = front(packed.adjOffsets, this.adjOffsets, numRows + 1);
    packed.adjIds = front(packed.adjIds, this.adjIds, numAdj);
    packed.adjPre = front(packed.adjPre, this.adjPre, numAdj);
    packed.adjPost = front(packed.adjPost, this.adjPost, numAdj);
    packed.adjFlags = front(packed.adjFlags, this.adjFlags, numAdj);
    packed.allowedOffsets = front(packed.allowedOffsets, this.allowedOffsets, numRows + 1);
    packed.allowedIds = front(packed.allowedIds, this.allowedIds, numAllowed);
    return packed;
  }

  /** Row `r` of the step, which samples batch row `sampleRow`. */
  private packRow(r: number, row: RowSampling, sampleRow: number): void {
    const { params } = row;
    const countsInput = this.isPlaceholder[sampleRow] === 1 && hasPenalties(params);
    let flags = countsInput ? SAMPLE_COUNT_INPUT : 0;
    // Top-k 1 keeps only the first maximum at any temperature (@ferrum/sampler's tie rule: lowest id), which
    // is the device's greedy branch; its processed logprob is 0, which only the sampling branch reports.
    if (params.temperature === 0 || (params.topK === 1 && params.logprobsMode !== 'processed')) {
      flags |= SAMPLE_GREEDY;
    }
    if (params.logprobsMode === 'processed') flags |= SAMPLE_PROCESSED_LOGPROBS;
    if (params.allowedTokenIds !== null) flags |= SAMPLE_ALLOWED_ONLY;
    const numTop = params.logprobs ?? 0;
    // Past the device's limit the engine's sampler finds the alternatives from the row's logits.
    const hostLogits = row.needsHostLogits || numTop > MAX_DEVICE_TOP_LOGPROBS;
    if (hostLogits) flags |= SAMPLE_SKIP;
    else flags |= numTop << SAMPLE_TOP_SHIFT;
    const { rowFloats, rowInts } = this;
    const f = r * ROW_FLOATS;
    rowFloats[f] = params.temperature;
    rowFloats[f + 1] = params.topP;
    rowFloats[f + 2] = params.minP;
    rowFloats[f + 3] = params.repetitionPenalty;
    rowFloats[f + 4] = params.presencePenalty;
    rowFloats[f + 5] = params.frequencyPenalty;
    rowInts[r * 4] = params.topK;
    rowInts[r * 4 + 1] = row.seed | 0;
    rowInts[r * 4 + 2] = numOutputTokensOf(row);
    rowInts[r * 4 + 3] = flags;
    if (!hostLogits) this.addAdjustments(row, countsInput);
    this.adjOffsets[r + 1] = this.numAdj;
    if (params.allowedTokenIds !== null && !hostLogits) this.addAllowed(params.allowedTokenIds);
    this.allowedOffsets[r + 1] = this.numAllowed;
  }

  private markPlaceholders(rows: Int32Array, value: 0 | 1): void {
    // A typed array ignores writes out of its range, and reads undefined there: such rows count as none.
    for (let i = 0; i < rows.length; i++) this.isPlaceholder[rows[i]] = value;
  }

  /** `countsInput`: the row's newest output is its placeholder input, which the device counts (see the class). */
  private addAdjustments(row: RowSampling, countsInput: boolean): void {
    const { params } = row;
    const start = this.numAdj;
    // The outputs are read only for penalties (numOutputTokensOf reads no array when the count is set).
    const numOutputs = numOutputTokensOf(row) - (countsInput ? 1 : 0);
    if (params.bannedTokenIds !== null) {
      for (const id of params.bannedTokenIds) this.flag(id, ADJ_BANNED, 'bannedTokenIds');
    }
    if (numOutputTokensOf(row) < params.minTokens) {
      for (const id of params.stopTokenIds) this.flag(id, ADJ_BANNED, 'stopTokenIds');
      if (!params.ignoreEos) for (const id of this.eosTokenIds) this.flag(id, ADJ_BANNED, 'eosTokenIds');
    }
    if (params.logitBias !== null) {
      for (const key in params.logitBias) {
        const e = this.entry(Number(key), 'logitBias'); // first: it may grow the arrays
        this.adjPre[e] += params.logitBias[key];
      }
    }
    if (params.repetitionPenalty !== 1) {
      const { promptTokenIds: prompt, outputTokenIds: output } = row;
      for (let i = 0; i < prompt.length; i++) this.flag(prompt[i], ADJ_REPETITION, 'promptTokenIds');
      for (let i = 0; i < numOutputs; i++) this.flag(output[i], ADJ_REPETITION, 'outputTokenIds');
    }
    const { frequencyPenalty: frequency, presencePenalty: presence } = params;
    if (frequency !== 0 || presence !== 0) {
      const output = row.outputTokenIds;
      // Presence is charged once per distinct output id; ADJ_IN_OUTPUT marks ids already charged.
      for (let i = 0; i < numOutputs; i++) {
        const e = this.entry(output[i], 'outputTokenIds');
        this.adjPost[e] -= frequency;
        if ((this.adjFlags[e] & ADJ_IN_OUTPUT) === 0) {
          this.adjFlags[e] |= ADJ_IN_OUTPUT;
          this.adjPost[e] -= presence;
        }
      }
    }
    for (let e = start; e < this.numAdj; e++) this.entryOf[this.adjIds[e]] = -1;
  }

  private flag(id: number, bit: number, field: string): void {
    const e = this.entry(id, field); // first: it may grow the arrays
    this.adjFlags[e] |= bit;
  }

  /** The adjustment entry of `id` in the current row, created on first use. */
  private entry(id: number, field: string): number {
    if (!(Number.isInteger(id) && id >= 0 && id < this.vocabSize)) {
      throw new FerrumError(
        'invalid_argument',
        `${field}: token id ${id} is outside [0, ${this.vocabSize})`,
        {
          details: { field, tokenId: id, vocabSize: this.vocabSize },
        },
      );
    }
    let e = this.entryOf[id];
    if (e >= 0) return e;
    e = this.numAdj++;
    if (e >= this.adjIds.length) this.growAdjustments();
    this.entryOf[id] = e;
    this.adjIds[e] = id;
    this.adjPre[e] = 0;
    this.adjPost[e] = 0;
    this.adjFlags[e] = 0;
    return e;
  }

  private addAllowed(allowed: readonly number[]): void {
    const start = this.numAllowed;
    for (const id of allowed) {
      if (this.entryOf[id] === -2) continue; // duplicate
      if (!(Number.isInteger(id) && id >= 0 && id < this.vocabSize)) {
        throw new FerrumError(
          'invalid_argument',
          `allowedTokenIds: token id ${id} is outside [0, ${this.vocabSize})`,
        );
      }
      if (this.numAllowed >= this.allowedIds.length)
        this.allowedIds = grow(this.allowedIds, this.numAllowed + 1);
      this.allowedIds[this.numAllowed++] = id;
      this.entryOf[id] = -2;
    }
    const list = this.allowedIds.subarray(start, this.numAllowed);
    for (const id of list) this.entryOf[id] = -1;
    list.sort();
  }

  private ensureRows(numRows: number): void {
    if (this.rowInts.length >= numRows * 4) return;
    this.rowFloats = new Float32Array(numRows * ROW_FLOATS);
    this.rowInts = new Int32Array(numRows * 4);
    this.adjOffsets = new Int32Array(numRows + 1);
    this.allowedOffsets = new Int32Array(numRows + 1);
  }

  private growAdjustments(): void {
    const size = Math.max(1024, this.adjIds.length * 2);
    this.adjIds = grow(this.adjIds, size);
    this.adjFlags = grow(this.adjFlags, size);
    this.adjPre = grow(this.adjPre, size);
    this.adjPost = grow(this.adjPost, size);
  }
}

/** `view` when it is the front `length` entries of `buffer` already, else a new view of them. */
function front<T extends Int32Array | Float32Array>(view: T, buffer: T, length: number): T {
  return view.buffer === buffer.buffer && view.length === length ? view : (buffer.subarray(0, length) as T);
}

function grow<T extends Int32Array | Float32Array>(array: T, minLength: number): T {
  const next = new (array.constructor as new (length: number) => T)(
    Math.max(minLength, array.length * 2, 1024),
  );
  next.set(array);
  return next;
}
