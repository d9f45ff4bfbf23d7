import type { ScheduledStep } from '@ferrum/interfaces';
import {
  type BackendCapabilities,
  type DeviceSamplingOp,
  hasPenalties,
  isGreedy,
  MAX_DEVICE_TOP_LOGPROBS,
  numOutputTokensOf,
  type RowSampling,
} from '@ferrum/types';

/**
 * Whether a step planned while step N runs may go to the runtime before N's sampled tokens reach the host,
 * its placeholder rows taking them from N's samples on the device (`ForwardBatch.previousTokens`; vLLM V1's
 * and SGLang's overlap). Only on runtimes whose capabilities say `previousTokens`. Conservative: a step is
 * launched early only when
 *
 * 1. neither it nor N has KV swaps: they are separate calls before a step's forward, so N's forward might
 *    not be issued yet (the runtime runs forwards in call order) and this one's would not be issued at once;
 * 2. every row it samples is sampled on the runtime (none returns host logits: the engine could not sample
 *    it before the next step, and a runtime may refuse host-logit rows behind a step in flight);
 * 3. every placeholder takes a sample N drew on the runtime (a host-sampled token is not on the device);
 * 4. no placeholder row's sampling reads the contents of its outputs, whose last entry (the placeholder) is
 *    unknown when the runtime reads the record: no repetition, presence or frequency penalty (unless the
 *    runtime counts the placeholder in them itself: `previousTokenPenalties`), and `minTokens` reached
 *    counting the placeholder. Static edits (bias, bans, allowed ids) read no outputs. The number of outputs
 *    is known (the record counts the placeholder), so seeded draws are unchanged.
 *
 * Whether the runtime samples a row is judged from the ops it needs against `deviceSampling`, which never
 * claims a row the runtime would leave to the host (the CPU runtime's `['greedy']` covers plain greedy rows
 * only, CUDA's list every built-in row); rows of requests with custom logits processors never qualify.
 */
export class EarlyLaunchRule {
  private readonly ops: ReadonlySet<DeviceSamplingOp>;
  private readonly countsPlaceholderPenalties: boolean;

  private constructor(capabilities: BackendCapabilities) {
    this.ops = new Set(capabilities.deviceSampling);
    this.countsPlaceholderPenalties = capabilities.previousTokenPenalties === true;
  }

  /** The rule for a backend, or null when its runtime cannot take placeholders on the device. */
  static of(capabilities: BackendCapabilities): EarlyLaunchRule | null {
    return capabilities.previousTokens === true ? new EarlyLaunchRule(capabilities) : null;
  }

  /** Whether `step`, planned while `inFlight` runs, may be launched before `inFlight` completes. */
  allows(step: ScheduledStep, inFlight: ScheduledStep): boolean {
    if (hasSwaps(step) || hasSwaps(inFlight)) return false;
    const { sampling } = step.batch;
    if (sampling === undefined) return false;
    for (const row of sampling) if (!this.samplesOnRuntime(row)) return false;
    const placeholders = step.placeholders;
    if (placeholders === undefined || placeholders.rows.length === 0) return true;
    const sources = inFlight.batch.sampling;
    if (sources === undefined) return false;
    for (const index of placeholders.sampleIndices) {
      const source = sources[index];
      if (source === undefined || !this.samplesOnRuntime(source)) return false;
    }
    return placeholderRowsIgnoreHistory(step, this.countsPlaceholderPenalties);
  }

  /** Whether the runtime samples `row` itself: every op the row needs is one it runs on the device. */
  private samplesOnRuntime(row: RowSampling): boolean {
    if (row.needsHostLogits) return false;
    const p = row.params;
    const { ops } = this;
    if (isGreedy(p)) {
      if (!ops.has('greedy')) return false;
    } else if (
      !ops.has('temperature') ||
      (p.topK > 0 && !ops.has('top_k')) ||
      (p.topP < 1 && !ops.has('top_p')) ||
      (p.minP > 0 && !ops.has('min_p'))
    ) {
      return false;
    }
    if (hasPenalties(p) && !ops.has('penalties')) return false;
    if (editsLogits(row) && !ops.has('logit_bias')) return false;
    if (p.logprobs === null) return true;
    if (p.logprobs === 0) return ops.has('logprobs');
    return ops.has('top_logprobs') && p.logprobs <= MAX_DEVICE_TOP_LOGPROBS;
  }
}

/**
 * Whether the sampling of every placeholder row reads no output token the runtime does not count itself (see
 * rule 4). Placeholder rows and sampled rows both ascend in the scheduler's batches; any other order is judged
 * unsafe.
 */
function placeholderRowsIgnoreHistory(step: ScheduledStep, penaltiesCounted: boolean): boolean {
  const { rows } = step.placeholders!;
  const { sampleRows, sampling } = step.batch;
  let i = 0;
  for (const row of rows) {
    while (i < sampleRows.length && sampleRows[i] < row) i++;
    if (i === sampleRows.length || sampleRows[i] !== row) return false;
    // One row may be sampled several times (a prompt forking into n > 1 sequences).
    for (let j = i; j < sampleRows.length && sampleRows[j] === row; j++) {
      const record = sampling![j];
      const p = record.params;
      if ((hasPenalties(p) && !penaltiesCounted) || numOutputTokensOf(record) < p.minTokens) return false;
    }
  }
  return true;
}

function hasSwaps(step: ScheduledStep): boolean {
  return step.swapOut.length > 0 || step.swapIn.length > 0;
}

/** Logit edits besides penalties: biases, allowed or banned ids, stop ids masked until `minTokens`. */
function editsLogits(row: RowSampling): boolean {
  const p = row.params;
  return (
    p.logitBias !== null ||
    p.allowedTokenIds !== null ||
    p.bannedTokenIds !== null ||
    numOutputTokensOf(row) < p.minTokens
  );
}
