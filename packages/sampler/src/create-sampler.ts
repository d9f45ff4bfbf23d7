import type { LogitsContext, LogitsProcessor, Sampler, SamplerOutput, SamplerRow } from '@ferrum/interfaces';
import { FerrumError, hasPenalties, numOutputTokensOf } from '@ferrum/types';
import {
  applyAllowedTokenIds,
  applyBannedTokenIds,
  applyLogitBias,
  applyMinTokens,
} from './apply-token-masks.js';
import { LogprobsRecorder } from './logprobs-recorder.js';
import { PenaltyApplier } from './penalty-applier.js';
import { maskedRowError, positiveInfinityError } from './row-errors.js';
import { argmax } from './row-reductions.js';
import { seededUniform } from './seeded-uniform.js';
import { TruncatedDistribution } from './truncated-distribution.js';

/** Options of {@link createSampler}. */
export interface SamplerOptions {
  /** Custom processors (the `LOGITS_PROCESSORS` registrations), run in this order on rows they apply to. */
  readonly processors?: readonly LogitsProcessor[];
  /** Buckets of the histograms that locate top-k / top-p thresholds (default 4096); a tuning knob. */
  readonly numBuckets?: number;
}

/**
 * Ferrum's host sampler. Per row, in place on the row's logits and in vLLM v1's order:
 *
 * 1. `allowedTokenIds` (everything else → -inf), `bannedTokenIds` (→ -inf);
 * 2. `minTokens`: stop ids and, unless `ignoreEos`, `context.eosTokenIds` → -inf until reached;
 * 3. `logitBias` (added);
 * 4. custom processors whose `appliesTo(context)` is true, in registration order;
 * 5. repetition penalty (HF: `l > 0 ? l / r : l × r` over prompt + output tokens), then frequency and
 *    presence penalties (OpenAI, over output tokens);
 * 6. `temperature === 0`: argmax (ties to the lowest id), no softmax, no sort. Otherwise temperature,
 *    min-p, top-k, top-p (see {@link TruncatedDistribution}) and an inverse-CDF draw over the kept ids in
 *    ascending order with `u = seededUniform(seed, outputTokenIds.length)`, so a seeded row gets the same
 *    token whatever it is batched with. Top-k 1 keeps only the first maximum, so it is greedy too.
 *
 * Greedy tie rule (temperature 0 and top-k 1): among tied maxima of the processed logits, the lowest token
 * id, whatever the seed; the rule of the CPU runtime's native argmax and the CUDA kernel's greedy branch.
 *
 * Log-probabilities (when `params.logprobs !== null`), by `params.logprobsMode`:
 * - `raw`: log-softmax of the model's logits as handed in, before any step above;
 * - `processed`: log-probabilities of the distribution the token was drawn from, after steps 1-5,
 *   temperature and truncation (truncated tokens have probability 0); for greedy rows, log-softmax after
 *   steps 1-5 (no temperature, no truncation), as vLLM does.
 *
 * Logits must be finite or -Infinity (masked); NaN entries are never drawn, +Infinity is rejected.
 *
 * All vocabulary-sized scratch is allocated on first use and reused; a sampler is not re-entrant (one call
 * at a time), and its output is valid until its next call.
 * @throws FerrumError `unsupported_interface_version` for a processor that is not `v1`.
 */
export function createSampler(options: SamplerOptions = {}): Sampler {
  const processors = options.processors ?? [];
  for (const processor of processors) {
    if (processor.specificationVersion !== 'v1') {
      throw new FerrumError(
        'unsupported_interface_version',
        `logits processor '${processor.name}' implements specification ${String(processor.specificationVersion)}; this sampler supports v1`,
      );
    }
  }
  return new ChainSampler(processors, options.numBuckets);
}

class ChainSampler implements Sampler {
  readonly specificationVersion = 'v1';
  private tokenIds = new Int32Array(0);
  private rawRow = new Float32Array(0);
  private savedAllowed = new Float32Array(0);
  private readonly penalties = new PenaltyApplier();
  private readonly distribution: TruncatedDistribution;
  private readonly recorder = new LogprobsRecorder();
  private readonly output = { tokenIds: this.tokenIds, logprobs: new Float32Array(0), topLogprobs: [] } as {
    tokenIds: Int32Array;
    logprobs: Float32Array;
    topLogprobs: SamplerOutput['topLogprobs'];
  };

  constructor(
    private readonly processors: readonly LogitsProcessor[],
    numBuckets: number | undefined,
  ) {
    this.distribution = new TruncatedDistribution({ numBuckets });
  }

  sample(logits: Float32Array, vocabSize: number, rows: readonly SamplerRow[]): SamplerOutput {
    const numRows = rows.length;
    if (!Number.isSafeInteger(vocabSize) || vocabSize < 1 || logits.length < numRows * vocabSize) {
      throw new FerrumError(
        'invalid_argument',
        `sampler: ${numRows} rows of vocabSize ${vocabSize} need ${numRows * vocabSize} logits, got ${logits.length}`,
      );
    }
    this.prepare(numRows, vocabSize);
    for (let r = 0; r < numRows; r++) {
      try {
        this.sampleRow(r, logits.subarray(r * vocabSize, (r + 1) * vocabSize), rows[r]);
      } catch (error) {
        if (error instanceof FerrumError && error.code === 'invalid_argument') {
          const requestId = rows[r].context.requestId;
          throw new FerrumError('invalid_argument', `request ${requestId}: ${error.message}`, {
            cause: error,
            details: { ...error.details, requestId, row: r },
          });
        }
        throw error;
      }
    }
    return this.output;
  }

  private prepare(numRows: number, vocabSize: number): void {
    if (this.tokenIds.length < numRows)
      this.tokenIds = new Int32Array(Math.max(numRows, 2 * this.tokenIds.length));
    if (this.rawRow.length !== vocabSize) this.rawRow = new Float32Array(vocabSize);
    this.recorder.prepare(numRows);
    const { output } = this;
    // Views are rebuilt only when the row count or a buffer changes.
    if (output.tokenIds.length !== numRows || output.tokenIds.buffer !== this.tokenIds.buffer) {
      output.tokenIds = this.tokenIds.subarray(0, numRows);
    }
    if (output.logprobs.length !== numRows || output.logprobs.buffer !== this.recorder.logprobs.buffer) {
      output.logprobs = this.recorder.logprobs.subarray(0, numRows);
    }
    output.topLogprobs = this.recorder.topLogprobs;
  }

  private sampleRow(r: number, row: Float32Array, { context, seed }: SamplerRow): void {
    const { params } = context;
    const numTop = params.logprobs;
    const rawLogprobs = numTop !== null && params.logprobsMode === 'raw';
    if (rawLogprobs) this.rawRow.set(row);
    this.applyChain(row, context);
    let tokenId: number;
    if (params.temperature === 0) {
      tokenId = argmax(row);
      if (tokenId < 0) throw maskedRowError();
      if (row[tokenId] === Number.POSITIVE_INFINITY) throw positiveInfinityError();
    } else {
      this.distribution.build(row, params);
      tokenId = this.distribution.draw(seededUniform(seed, numOutputTokensOf(context)));
    }
    this.tokenIds[r] = tokenId;
    if (numTop === null) this.recorder.skip(r);
    else if (rawLogprobs) this.recorder.recordFromRow(r, tokenId, this.rawRow, numTop);
    else if (params.temperature === 0) this.recorder.recordFromRow(r, tokenId, row, numTop);
    else this.recorder.recordFromDistribution(r, tokenId, row, this.distribution, numTop);
  }

  /** Steps 1-5 of {@link createSampler}, in place. */
  private applyChain(row: Float32Array, context: LogitsContext): void {
    const { params } = context;
    if (params.allowedTokenIds !== null) {
      if (this.savedAllowed.length < params.allowedTokenIds.length) {
        this.savedAllowed = new Float32Array(Math.max(row.length, params.allowedTokenIds.length));
      }
      applyAllowedTokenIds(row, params.allowedTokenIds, this.savedAllowed);
    }
    if (params.bannedTokenIds !== null) applyBannedTokenIds(row, params.bannedTokenIds);
    if (params.minTokens > 0) applyMinTokens(row, context);
    if (params.logitBias !== null) applyLogitBias(row, params.logitBias);
    for (const processor of this.processors) {
      if (processor.appliesTo(context)) processor.process(row, context);
    }
    // The outputs may be a view made when read (RowSampling.numOutputTokens): only penalties need them.
    if (hasPenalties(params))
      this.penalties.apply(row, params, context.promptTokenIds, context.outputTokenIds);
  }
}
