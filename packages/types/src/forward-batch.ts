import type { SamplingParams } from './sampling-params.js';

/**
 * Per-row sampling instructions inside a {@link ForwardBatch}: the built-in chain described as data so a
 * runtime can run it on the device.
 */
export interface RowSampling {
  /** Request the row belongs to (custom logits processors key their state on it). */
  readonly requestId: string;
  /** Parameters of the request this row belongs to. */
  readonly params: SamplingParams;
  /**
   * 32-bit seed of the request's RNG. Random draws are a pure function of (seed, number of tokens generated
   * so far), so a seeded request samples the same tokens whatever it is batched with, on any backend.
   */
  readonly seed: number;
  /** Tokens generated so far by this sequence (for penalties and `minTokens`). Valid for this step only. */
  readonly outputTokenIds: Int32Array;
  /**
   * `outputTokenIds.length`, when the producer says it. The engine's scheduler sets it and makes the
   * `outputTokenIds` view only when that is read, so a consumer that needs only the count (seeded draws,
   * `minTokens`) reads it through {@link numOutputTokensOf} and leaves the step allocation-free.
   */
  readonly numOutputTokens?: number;
  /** Prompt tokens (for repetition penalty). Valid for this step only. */
  readonly promptTokenIds: Int32Array;
  /** Ask the runtime to return this row's full logits to the host (custom processors run there). */
  readonly needsHostLogits: boolean;
}

/**
 * One step of work: a flattened, unpadded batch of new tokens of B sequences (FlashInfer's indptr
 * convention, KV page size 1). Plain typed arrays so it crosses into native code without conversion.
 *
 * Lifetime: the arrays are owned by the producer (the scheduler reuses preallocated buffers); a runtime
 * must copy what it needs before its `forward()` Promise settles and must not keep references after.
 */
export interface ForwardBatch {
  /** T new tokens of all sequences, concatenated. */
  readonly tokenIds: Int32Array;
  /** T absolute positions of those tokens. */
  readonly positions: Int32Array;
  /** B+1 offsets: sequence b owns rows `qIndptr[b] .. qIndptr[b+1]`. */
  readonly qIndptr: Int32Array;
  /** B+1 offsets into `kvIndices`. */
  readonly kvIndptr: Int32Array;
  /** Sequence b attends to slots `kvIndices[kvIndptr[b] .. kvIndptr[b+1]]`: cached prefix then new tokens, in order. */
  readonly kvIndices: Int32Array;
  /** T slots the new tokens' K and V are written to. */
  readonly slotMapping: Int32Array;
  /** S rows (indices into the T rows) whose logits are sampled. */
  readonly sampleRows: Int32Array;
  /** S sampling descriptions, one per sampled row; when absent the runtime returns logits for every sampled row. */
  readonly sampling?: readonly RowSampling[];
  /** Number of sequences B (`qIndptr.length - 1` unless the producer over-allocated; always authoritative). */
  readonly numSeqs: number;
  /** Number of new tokens T. */
  readonly numTokens: number;
  /**
   * Rows whose input token the host does not know yet: row `rows[i]` takes the token this runtime sampled at
   * sample index `sampleIndices[i]` (an index into that batch's `sampleRows`) in the previous `forward()` on the
   * same executor, and its `tokenIds` entry is ignored. Only for runtimes whose capabilities say
   * `previousTokens`; the previous forward must have sampled those indices on the runtime (not host-logit rows).
   * The engine uses it to launch step N + 1 before step N's tokens reach the host (overlap scheduling).
   */
  readonly previousTokens?: { readonly rows: Int32Array; readonly sampleIndices: Int32Array };
}

/** What a runtime returns for a {@link ForwardBatch}. */
export interface ForwardResult {
  /** S sampled token ids (undefined entries are -1 when the runtime was not asked to sample). */
  readonly tokens: Int32Array;
  /** S log-probabilities of the sampled tokens, when sampling ran on the runtime. */
  readonly logprobs?: Float32Array;
  /** S × vocab row-major f32 logits for rows that asked for host logits, or for all rows when `sampling` was absent. */
  readonly logits?: Float32Array;
  /** Row indices (into the S sampled rows) that `logits` holds, in order. */
  readonly logitsRows?: Int32Array;
  /**
   * The alternatives found on the runtime (`top_logprobs`), present when a row sampled there asked for some: S ×
   * MAX_DEVICE_TOP_LOGPROBS entries, row i's at `i × MAX_DEVICE_TOP_LOGPROBS`, best first (larger logprob, then
   * lower id), in the row's `logprobsMode`. A row holds its `params.logprobs` entries, or fewer where fewer tokens
   * have a probability, and token id -1 ends a shorter list. Rows that asked for none are undefined.
   */
  readonly topLogprobs?: { readonly tokenIds: Int32Array; readonly logprobs: Float32Array };
}

/**
 * How many tokens a sampling row has generated: `numOutputTokens` when set, else `outputTokenIds.length`.
 * Reads no array when the producer set the count (see {@link RowSampling.numOutputTokens}).
 */
export function numOutputTokensOf(row: {
  readonly outputTokenIds: Int32Array;
  readonly numOutputTokens?: number;
}): number {
  return row.numOutputTokens ?? row.outputTokenIds.length;
}
