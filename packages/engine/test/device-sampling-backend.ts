import type { ComputeBackend, ModelExecutor, SamplerRow } from '@ferrum/interfaces';
import { createCpuBackend } from '@ferrum/runtime-cpu';
import { createSampler } from '@ferrum/sampler';
import {
  DEVICE_SAMPLING_OPS,
  FerrumError,
  type ForwardBatch,
  type ForwardResult,
  MAX_DEVICE_TOP_LOGPROBS,
  type RowSampling,
} from '@ferrum/types';

/** What a forward leaves for the next one's `previousTokens`: its samples, and which rows went to the host. */
interface Samples {
  readonly tokens: Promise<Int32Array>;
  readonly hostRows: readonly boolean[];
}

/**
 * A stand-in for a GPU runtime with device sampling, on the CPU runtime: every built-in row is sampled "on
 * the device" (here, `@ferrum/sampler` over the CPU runtime's logits), with up to MAX_DEVICE_TOP_LOGPROBS
 * alternatives; rows with `needsHostLogits` or more alternatives return logits. It behaves as the CUDA
 * runtime's contract says: each row's sampling is read when `forward()` is called (a copy of its outputs, so a
 * step launched before its placeholders are known sees exactly that),
 * forwards run in call order, `previousTokens` rows take the previous forward's device samples, and a
 * forward with host-logit rows called while another runs is refused. With `previousTokenPenalties` it says so
 * in its capabilities, and a `previousTokens` row with penalties counts the token it takes as its newest output
 * (the record's value for it, unknown when the step was launched early, is not read), as the CUDA runtime does.
 */
export function createDeviceSamplingBackend(
  options: { previousTokenPenalties?: boolean } = {},
): ComputeBackend {
  const countsPlaceholders = options.previousTokenPenalties === true;
  const cpu = createCpuBackend();
  return {
    specificationVersion: 'v1',
    name: 'cpu',
    async probe() {
      return {
        ...(await cpu.probe()),
        deviceSampling: DEVICE_SAMPLING_OPS,
        previousTokens: true,
        previousTokenPenalties: countsPlaceholders,
      };
    },
    async loadModel(spec): Promise<ModelExecutor> {
      const inner = await cpu.loadModel(spec);
      const sampler = createSampler();
      const { vocabSize, eosTokenIds } = spec.config;
      let previous: Samples = { tokens: Promise.resolve(new Int32Array(0)), hostRows: [] };
      let numInFlight = 0;
      const settled = () => {
        numInFlight--;
      };

      async function run(batch: ForwardBatch, rows: readonly RowSampling[], before: Samples) {
        const tokenIds = batch.tokenIds.slice();
        const earlier = await before.tokens.catch(() => null);
        const refer = batch.previousTokens;
        if (refer !== undefined) {
          if (earlier === null) throw new FerrumError('invalid_argument', 'the previous forward failed');
          refer.rows.forEach((row, i) => {
            tokenIds[row] = earlier[refer.sampleIndices[i]];
          });
          if (countsPlaceholders) {
            // A placeholder row's newest output is the token it takes (the record holds a stand-in value).
            batch.sampleRows.forEach((row, i) => {
              if (refer.rows.includes(row))
                rows[i].outputTokenIds[rows[i].outputTokenIds.length - 1] = tokenIds[row];
            });
          }
        }
        const { logits } = await inner.forward({
          ...batch,
          tokenIds,
          sampling: undefined,
          previousTokens: undefined,
        });
        return sampleRows(logits!, rows);
      }

      function sampleRows(logits: Float32Array, rows: readonly RowSampling[]): ForwardResult {
        const deviceRows = rows.flatMap((row, i) => (returnsLogits(row) ? [] : [i]));
        const hostRows = rows.flatMap((row, i) => (returnsLogits(row) ? [i] : []));
        const tokens = new Int32Array(rows.length).fill(-1);
        const logprobs = new Float32Array(rows.length).fill(Number.NaN);
        const pick = (indices: number[]) => {
          const out = new Float32Array(indices.length * vocabSize);
          indices.forEach((i, j) => {
            out.set(logits.subarray(i * vocabSize, (i + 1) * vocabSize), j * vocabSize);
          });
          return out;
        };
        const samplerRows: SamplerRow[] = deviceRows.map((i) => ({
          seed: rows[i].seed,
          context: { ...rows[i], eosTokenIds },
        }));
        const sampled = sampler.sample(pick(deviceRows), vocabSize, samplerRows);
        const width = MAX_DEVICE_TOP_LOGPROBS;
        const top = {
          tokenIds: new Int32Array(rows.length * width).fill(-1),
          logprobs: new Float32Array(rows.length * width),
        };
        deviceRows.forEach((i, j) => {
          tokens[i] = sampled.tokenIds[j];
          logprobs[i] = sampled.logprobs[j];
          sampled.topLogprobs[j]?.forEach((e, k) => {
            top.tokenIds[i * width + k] = e.tokenId;
            top.logprobs[i * width + k] = e.logprob;
          });
        });
        const asked = deviceRows.some((i) => (rows[i].params.logprobs ?? 0) > 0);
        const found = asked ? { tokens, logprobs, topLogprobs: top } : { tokens, logprobs };
        if (hostRows.length === 0) return found;
        return { ...found, logits: pick(hostRows), logitsRows: Int32Array.from(hostRows) };
      }

      return {
        info: inner.info,
        kv: inner.kv,
        forward(batch: ForwardBatch): Promise<ForwardResult> {
          const before = previous;
          try {
            const rows = snapshotRows(batch);
            if (numInFlight > 0 && rows.some(returnsLogits)) {
              throw new FerrumError('invalid_argument', 'host-logit rows behind a step in flight');
            }
            checkReferences(batch, before.hostRows);
            const result = run(batch, rows, before);
            const tokens = result.then((r) => r.tokens);
            // The next forward reads the failure; without one, nobody needs to.
            tokens.catch(() => undefined);
            previous = { tokens, hostRows: rows.map(returnsLogits) };
            numInFlight++;
            result.then(settled, settled);
            return result;
          } catch (error) {
            previous = { tokens: Promise.reject(error), hostRows: [] };
            previous.tokens.catch(() => undefined);
            return Promise.reject(error);
          }
        },
        dispose: () => inner.dispose(),
      };
    },
  };
}

/** Each row's sampling as it is now, outputs and prompt copied. */
function snapshotRows(batch: ForwardBatch): RowSampling[] {
  if (batch.sampling === undefined) throw new FerrumError('invalid_argument', 'this runtime needs sampling');
  return batch.sampling.map((row) => ({
    ...row,
    outputTokenIds: row.outputTokenIds.slice(),
    promptTokenIds: row.promptTokenIds.slice(),
  }));
}

function checkReferences(batch: ForwardBatch, previousHostRows: readonly boolean[]): void {
  const refer = batch.previousTokens;
  if (refer === undefined) return;
  for (const index of refer.sampleIndices) {
    if (!(index >= 0 && index < previousHostRows.length) || previousHostRows[index]) {
      throw new FerrumError('invalid_argument', `previousTokens: sample ${index} is not on the device`);
    }
  }
}

/** Whether the runtime returns `row`'s logits rather than sampling it (as the CUDA runtime decides). */
function returnsLogits(row: RowSampling): boolean {
  return row.needsHostLogits || (row.params.logprobs ?? 0) > MAX_DEVICE_TOP_LOGPROBS;
}
