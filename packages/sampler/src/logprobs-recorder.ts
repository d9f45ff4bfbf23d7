import { logSumExp } from './row-reductions.js';
import { TopNSelector } from './top-n-selector.js';
import type { TruncatedDistribution } from './truncated-distribution.js';

/** One entry of a row's top log-probabilities; pooled and reused across calls. */
interface MutableTopLogprob {
  tokenId: number;
  logprob: number;
}

/**
 * Writes per-row chosen-token log-probabilities and top-N lists into buffers that live until the next
 * call. Entry objects are pooled per row slot, so steady-state calls allocate no entries.
 *
 * Both come from the same float32 logit by the same double-precision formula, then are rounded to float32
 * (the precision of `logprobs`): a chosen token that is listed carries exactly the same value in both.
 */
export class LogprobsRecorder {
  /** Chosen-token log-probabilities, one per row slot. */
  logprobs = new Float32Array(0);
  /** Top-N lists, one per row slot (null when not asked). */
  readonly topLogprobs: (MutableTopLogprob[] | null)[] = [];
  private readonly lists: MutableTopLogprob[][] = [];
  private readonly pools: MutableTopLogprob[][] = [];
  private readonly selector = new TopNSelector();

  /** Size the buffers for `numRows` rows of this call. */
  prepare(numRows: number): void {
    if (this.logprobs.length < numRows)
      this.logprobs = new Float32Array(Math.max(numRows, 2 * this.logprobs.length));
    this.topLogprobs.length = numRows;
  }

  /** Row `r` did not ask for log-probabilities. */
  skip(r: number): void {
    this.logprobs[r] = Number.NaN;
    this.topLogprobs[r] = null;
  }

  /** Log-softmax of a full `row` (raw logits, or processed logits of a greedy row). */
  recordFromRow(r: number, tokenId: number, row: Float32Array, numTop: number): void {
    const normalizer = logSumExp(row);
    this.logprobs[r] = Math.fround(row[tokenId] - normalizer);
    this.selector.select(row, numTop, null, row.length);
    const list = this.listFor(r, this.selector.count);
    for (let k = 0; k < list.length; k++) {
      list[k].tokenId = this.selector.idAt(k);
      list[k].logprob = Math.fround(this.selector.valueAt(k) - normalizer);
    }
  }

  /** Log-probabilities under the truncated, temperature-scaled distribution `row` was sampled from. */
  recordFromDistribution(
    r: number,
    tokenId: number,
    row: Float32Array,
    distribution: TruncatedDistribution,
    numTop: number,
  ): void {
    this.logprobs[r] = Math.fround(distribution.logprobOf(row[tokenId]));
    this.selector.select(row, numTop, distribution.ids, distribution.count);
    const list = this.listFor(r, this.selector.count);
    for (let k = 0; k < list.length; k++) {
      list[k].tokenId = this.selector.idAt(k);
      list[k].logprob = Math.fround(distribution.logprobOf(this.selector.valueAt(k)));
    }
  }

  /** Row slot r's list, resized to `length` with pooled entries, installed as its output. */
  private listFor(r: number, length: number): MutableTopLogprob[] {
    while (this.pools.length <= r) {
      this.pools.push([]);
      this.lists.push([]);
    }
    const pool = this.pools[r];
    while (pool.length < length) pool.push({ tokenId: 0, logprob: 0 });
    const list = this.lists[r];
    list.length = length;
    for (let k = 0; k < length; k++) list[k] = pool[k];
    this.topLogprobs[r] = list;
    return list;
  }
}
